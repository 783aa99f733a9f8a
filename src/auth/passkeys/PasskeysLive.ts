import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { AdminPasskeysHttpLive } from "./AdminPasskeysHttp.js"
import { ExpiredPasskeyChallenges } from "./ExpiredPasskeyChallenges.js"
import { Passkeys } from "./Passkeys.js"
import { PasskeysEnabledLive } from "./PasskeysEnabled.js"
import { PasskeysHttpLive } from "./PasskeysHttp.js"

/**
 * Passkeys: the user routes behind the PASSKEY_ENABLED gate (then the bearer check or the captcha), the admin routes
 * behind the admin JWT check, over the service, and the sweep of abandoned challenges; the shared floors come from
 * AuthHttp.
 */
export const PasskeysLive = Layer.mergeAll(PasskeysHttpLive, AdminPasskeysHttpLive, ExpiredPasskeyChallenges.Default).pipe(
  Layer.provide([PasskeysEnabledLive, AuthenticatedLive, CaptchaProtectedLive, AdminAuthenticatedLive, Passkeys.Default])
)
