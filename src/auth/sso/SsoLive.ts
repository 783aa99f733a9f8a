import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { AdminSsoProviders } from "./AdminSsoProviders.js"
import { SamlEnabledLive } from "./SamlEnabled.js"
import { SingleSignOn } from "./SingleSignOn.js"
import { AdminSsoHttpLive, SsoHttpLive } from "./SsoHttp.js"

/**
 * SAML single sign-on: the public routes behind the SAML_ENABLED gate (then the captcha on POST /sso), the admin
 * provider routes behind the admin JWT check (expired relay states and used assertions are swept by
 * AuthHousekeeping).
 */
export const SsoLive = Layer.mergeAll(SsoHttpLive, AdminSsoHttpLive).pipe(
  Layer.provide([SamlEnabledLive, CaptchaProtectedLive, AdminAuthenticatedLive, SingleSignOn.Default, AdminSsoProviders.Default])
)
