import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthError } from "../../domain/AuthError.js"
import type { ExternalProfile } from "../../domain/ExternalLink.js"
import { claimString, claimTruthy, idTokenBase, pickClaims, withoutTrailingSlash } from "../../domain/IdToken.js"
import type { ProviderProfile } from "../OAuthProvider.js"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { asProviderProfile, authorizationUrl, clientFor, exchangeWith, mapped, redirectClientId, verifiedIdToken } from "../ProviderKit.js"

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

const AZURE_ISSUER = /^https:\/\/login\.microsoftonline\.com\/[^/]+\/v2\.0$/

/** Whether an issuer is a Microsoft tenant's (`https://login.microsoftonline.com/<tenant>/v2.0`). */
export const isAzureIssuer = (issuer: string): boolean => AZURE_ISSUER.test(withoutTrailingSlash(issuer))

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

/** A verified Azure ID token as GoTrue's parser reads it: the name, preferred_username, and the tenant as a custom claim. */
export const azureIdTokenProfile = (payload: Readonly<Record<string, unknown>>): Either.Either<ExternalProfile, AuthError> =>
  Either.map(idTokenBase(payload), ({ base, issuer }) => {
    // Azure marks a verified address with xms_edov (the email's domain owner verified it) rather than email_verified.
    const tid = claimString(payload["tid"])
    return {
      ...base,
      emailVerified: base.emailVerified || claimTruthy(payload["xms_edov"]),
      name: claimString(payload["name"]),
      claims: { ...issuer, ...pickClaims(payload, ["preferred_username"]), ...(tid !== undefined ? { custom_claims: { tid } } : {}) }
    }
  })

/**
 * The verified ID token's claims as a profile, by the ID-token grant's rules: the subject (pairwise per app) is the
 * identity; the address counts as verified only when the token says so (`xms_edov`: the domain owner verified it),
 * since an Azure account's `email` is otherwise whatever its owner typed.
 */
export const azureProfile = (claims: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> =>
  asProviderProfile(azureIdTokenProfile(claims))

/** Azure / Microsoft Entra ID at the tenant URL EXTERNAL_AZURE_URL (default the common endpoint). */
export const azure: ProviderDescriptor = {
  make: (config) => {
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
  },
  // A native app's token names its tenant's issuer: the request's, or else the token's own. Its keys are read under
  // the tenant URL, Microsoft's common key set (the default) signing for every tenant.
  idToken: {
    order: 3,
    issuedBy: isAzureIssuer,
    expectedIssuer: ({ issuer, unverifiedIssuer }) => {
      const tenantIssuer = isAzureIssuer(issuer) ? issuer : unverifiedIssuer ?? ""
      return isAzureIssuer(tenantIssuer)
        ? Either.right(withoutTrailingSlash(tenantIssuer))
        : Either.left(AuthError.validation("Unable to detect issuer in ID token for Azure provider"))
    },
    jwksUrl: (url) => azureEndpoints(url).jwks,
    profile: azureIdTokenProfile
  }
}
