import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { ProviderFailure, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, mapped } from "../ProviderKit.js"

/**
 * WorkOS SSO's endpoints on api.workos.com; EXTERNAL_WORKOS_URL replaces that host: `<url>/sso/authorize`,
 * `<url>/sso/token`.
 */
export const workosEndpoints = (baseUrl: string | undefined) => {
  const api = (baseUrl ?? "https://api.workos.com").replace(/\/+$/, "")
  return { authorization: `${api}/sso/authorize`, token: `${api}/sso/token`, issuer: api }
}

/**
 * The `profile` object of WorkOS's token answer (there is no profile endpoint to call). WorkOS relays what the
 * organization's identity provider asserted and does not vouch for the address, so it is never taken as verified:
 * a WorkOS sign-in is not linked to an existing account by email.
 */
export const workosProfile = (profile: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(profile, "id")
  if (id === null) return Either.left("token answer has no profile id")
  const email = stringClaim(profile, "email")
  const first = stringClaim(profile, "first_name")
  const last = stringClaim(profile, "last_name")
  const joined = [first, last].filter((part) => part !== null).join(" ")
  const name = joined === "" ? null : joined
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: false, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (first !== null) claims["given_name"] = first
  if (last !== null) claims["family_name"] = last
  for (const key of ["connection_id", "connection_type", "organization_id", "idp_id"] as const) {
    const value = stringClaim(profile, key)
    if (value !== null) claims[key] = value
  }
  const attributes = profile["raw_attributes"]
  if (typeof attributes === "object" && attributes !== null) claims["raw_attributes"] = attributes
  return Either.right({ providerId: id, email, emailVerified: false, name, avatarUrl: null, claims })
}

/**
 * The app's /authorize parameters as WorkOS takes them: `connection` and `organization` as they are, and
 * `workos_provider` as WorkOS's `provider` (GoTrue's spelling, since `provider` names the provider at /authorize).
 */
export const workosPassThrough = (passThrough: ReadonlyArray<readonly [string, string]>): ReadonlyArray<readonly [string, string]> =>
  passThrough.map(([key, value]) => key === "workos_provider" ? ["provider", value] as const : [key, value] as const)

/**
 * WorkOS SSO, or a stand-in at EXTERNAL_WORKOS_URL. Which connection to use comes from the app's `connection`,
 * `organization` or `workos_provider` /authorize parameter (auth-js `queryParams`).
 */
export const workos: ProviderDescriptor = {
  make: (config) => {
    const endpoints = workosEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "workos",
      // A confidential client; WorkOS's PKCE is for clients without a secret.
      usesPkce: false,
      // WorkOS SSO has no scopes; an app's `scopes` still go on, as GoTrue sends them.
      authorizationUrl: (request) =>
        authorizationUrl(client, endpoints.authorization, [])({ ...request, passThrough: workosPassThrough(request.passThrough) }),
      // WorkOS reads client_id and client_secret from the form body.
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) =>
        tokens.raw === undefined
          ? Effect.fail(new ProviderFailure({ step: "profile", reason: "no token answer to read the profile from" }))
          : mapped(workosProfile(asObject(tokens.raw["profile"]), endpoints.issuer))
    }
  }
}
