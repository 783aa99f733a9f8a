import * as OpenApi from "@effect/platform/OpenApi"
import { VERSION } from "../Package.js"
import { AdminAuditGroup } from "./admin/AdminAuditApi.js"
import { AdminLinksGroup } from "./admin/AdminLinksApi.js"
import { AdminRevokedSessionsGroup } from "./admin/AdminRevokedSessionsApi.js"
import { AdminUsersGroup } from "./admin/AdminUsersApi.js"
import { AuthApiBase } from "./contract/AuthApiBase.js"
import { ExternalGroup } from "./external/ExternalApi.js"
import { IdentitiesGroup } from "./external/IdentitiesApi.js"
import { AUTH_PREFIX } from "./http/AuthPrefix.js"
import { InviteGroup } from "./invite/InviteApi.js"
import { LogoutGroup } from "./logout/LogoutApi.js"
import { AdminFactorsGroup } from "./mfa/AdminFactorsApi.js"
import { FactorsGroup } from "./mfa/FactorsApi.js"
import {
  AdminOAuthClientsGroup,
  OAuthDiscoveryGroup,
  OAuthGrantsGroup,
  OAuthIntrospectionGroup,
  OAuthServerGroup
} from "./oauthserver/OAuthServerApi.js"
import { OtpGroup } from "./otp/OtpApi.js"
import { AdminPasskeysGroup, PasskeysGroup } from "./passkeys/PasskeysApi.js"
import { ProfileGroup } from "./profile/ProfileApi.js"
import { RecoverGroup } from "./recover/RecoverApi.js"
import { ResendGroup } from "./resend/ResendApi.js"
import { SettingsGroup } from "./settings/SettingsApi.js"
import { SignupGroup } from "./signup/SignupApi.js"
import { AdminSsoGroup, SsoGroup } from "./sso/SsoApi.js"
import { TokenGroup } from "./token/TokenApi.js"
import { AdminSessionsGroup, UserSessionsGroup } from "./usersessions/UserSessionsApi.js"
import { VerifyGroup } from "./verify/VerifyApi.js"

/**
 * The auth server's HTTP contract (Supabase Auth wire-compatible): every feature's slice, in the document's order.
 * Handlers implement it; OpenAPI comes from it.
 */
export class AuthApi extends AuthApiBase
  .add(SettingsGroup)
  .add(SignupGroup)
  .add(TokenGroup)
  .add(VerifyGroup)
  .add(ExternalGroup)
  .add(OtpGroup)
  .add(SsoGroup)
  .add(RecoverGroup)
  .add(ResendGroup)
  .add(ProfileGroup)
  .add(IdentitiesGroup)
  .add(LogoutGroup)
  .add(UserSessionsGroup)
  .add(FactorsGroup)
  .add(AdminUsersGroup)
  .add(AdminFactorsGroup)
  .add(AdminSessionsGroup)
  .add(AdminLinksGroup)
  .add(InviteGroup)
  .add(AdminAuditGroup)
  .add(PasskeysGroup).add(AdminPasskeysGroup)
  .add(OAuthDiscoveryGroup).add(OAuthServerGroup).add(OAuthIntrospectionGroup).add(OAuthGrantsGroup).add(AdminOAuthClientsGroup)
  .add(AdminRevokedSessionsGroup)
  .add(AdminSsoGroup)
  .annotate(OpenApi.Title, "Gatehouse Auth")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    `A Supabase Auth (GoTrue) compatible authentication server. Every auth path is served both at the root and under \`${AUTH_PREFIX}\`, where supabase-js calls it (choose it in the Servers list).\n\n` +
      "Where GoTrue's answer and a strict reading of HTTP disagree, the server answers as GoTrue does, since clients " +
      "(auth-js) rely on it, and this document says so: a well-formed request refused for what its data meets (a wrong " +
      "password, a bad or expired grant, a taken address, a switched-off provider) is 400 or 422 with the error code " +
      "naming why, not 401, 404 or 409. An operation that answers so lists those statuses in `x-refuses-well-formed`. " +
      "Request bodies state the rules the services check; GoTrue reads `null` and `\"\"` as an absent field, and " +
      "ignores fields it does not know."
  )
  .annotate(OpenApi.Servers, [
    { url: "/", description: "The auth API at the root" },
    { url: AUTH_PREFIX, description: "The same API where supabase-js calls it" }
  ]) {}
