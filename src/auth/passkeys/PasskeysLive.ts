import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { AdminPasskeysHttpLive } from "./AdminPasskeysHttp.js"
import { Passkeys } from "./Passkeys.js"
import { PasskeysEnabledLive } from "./PasskeysEnabled.js"
import { PasskeysHttpLive } from "./PasskeysHttp.js"

/**
 * Passkeys: the user routes behind the PASSKEY_ENABLED gate (then the bearer check or the captcha), the admin routes
 * behind the admin JWT check, over the service; the shared floors come from AuthHttp (abandoned challenges are swept
 * by AuthHousekeeping).
 */
export const PasskeysLive = Layer.mergeAll(PasskeysHttpLive, AdminPasskeysHttpLive).pipe(
  Layer.provide([PasskeysEnabledLive, AuthenticatedLive, CaptchaProtectedLive, AdminAuthenticatedLive, Passkeys.Default])
)
