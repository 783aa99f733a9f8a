import { Effect, type Either, Option } from "effect"
import type { OAuthProviderConfig } from "../../../config/AppConfig.js"
import { isAzureIssuer, profileFromIdToken } from "../../domain/IdToken.js"
import type { OAuthProvider, ProviderProfile } from "../OAuthProvider.js"
import { asProviderProfile, verifiedIdToken } from "../ProviderIdToken.js"
import { authorizationUrl, clientFor, exchangeWith, mapped, redirectClientId } from "../ProviderKit.js"

/**
 * The Microsoft identity platform (v2.0 endpoints) under a tenant URL, as GoTrue takes EXTERNAL_AZURE_URL:
 * `https://login.microsoftonline.com/<tenant id or domain>`, or `/common` (any work, school or personal account,
 * the default), `/organizations`, `/consumers`. A proxy's or a test's URL takes the same shape; only the host moves.
 */
export const azureEndpoints = (tenantUrl: string | undefined) => {
  const base = (tenantUrl ?? "https://login.microsoftonline.com/common").replace(/\/+$/, "")
  return {
    authorization: `${base}/oauth2/v2.0/authorize`,
    token: `${base}/oauth2/v2.0/token`,
    jwks: `${base}/discovery/v2.0/keys`,
    tenant: base.slice(base.lastIndexOf("/") + 1)
  }
}

/** openid for the ID token the profile is read from; email and profile so that token carries the address and name. */
export const AZURE_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email"]

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Microsoft's rule for a multi-tenant app: the issuer is `https://login.microsoftonline.com/{tid}/v2.0` with the
 * token's own tenant id. A tenant URL naming one tenant by id also pins tid to it; one naming it by domain (or
 * common) cannot be compared without discovery and relies on the audience, which is ours alone.
 */
export const azureIssuerMatches = (tenant: string) => (claims: Readonly<Record<string, unknown>>): boolean => {
  const iss = claims["iss"]
  const tid = claims["tid"]
  if (typeof iss !== "string" || typeof tid !== "string" || !isAzureIssuer(iss)) return false
  if (iss.replace(/\/+$/, "") !== `https://login.microsoftonline.com/${tid}/v2.0`) return false
  return !GUID.test(tenant) || tenant.toLowerCase() === tid.toLowerCase()
}

/**
 * The verified ID token's claims as a profile, by the ID-token grant's rules: the subject (pairwise per app) is the
 * identity; the address counts as verified only when the token says so (`xms_edov`: the domain owner verified it),
 * since an Azure account's `email` is otherwise whatever its owner typed.
 */
export const azureProfile = (claims: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> =>
  asProviderProfile(profileFromIdToken("azure", claims))

/** Azure / Microsoft Entra ID at the tenant URL EXTERNAL_AZURE_URL (default the common endpoint). */
export const azure = (config: OAuthProviderConfig): OAuthProvider => {
  const endpoints = azureEndpoints(Option.getOrUndefined(config.url))
  const client = clientFor(config)
  return {
    name: "azure",
    usesPkce: true,
    authorizationUrl: authorizationUrl(client, endpoints.authorization, AZURE_SCOPES),
    exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
    profile: (tokens) =>
      Effect.flatMap(
        verifiedIdToken(tokens.idToken, { jwksUrl: endpoints.jwks, audience: redirectClientId(config), issuer: azureIssuerMatches(endpoints.tenant) }),
        (claims) => mapped(azureProfile(claims))
      )
  }
}
