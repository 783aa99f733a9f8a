import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { AuthError } from "../../domain/AuthError.js"
import type { ExternalProfile } from "../../domain/ExternalLink.js"
import { claimTruthy, idTokenBase } from "../../domain/IdToken.js"
import type { AuthorizationRequest, ProviderProfile } from "../OAuthProvider.js"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { asProviderProfile, authorizationUrl, clientFor, exchangeWith, mapped, redirectClientId, verifiedIdToken } from "../ProviderKit.js"

/** The issuer of every Apple ID token, whichever host serves the endpoints. */
export const APPLE_ISSUER = "https://appleid.apple.com"

/**
 * Sign in with Apple's endpoints on https://appleid.apple.com; EXTERNAL_APPLE_URL (a proxy, or a test's fake)
 * replaces that origin. The issuer an ID token must name stays Apple's whatever the URL: it moves where the keys
 * are read, never whose tokens are accepted.
 */
export const appleEndpoints = (baseUrl: string | undefined) => {
  const base = (baseUrl ?? APPLE_ISSUER).replace(/\/+$/, "")
  return { authorization: `${base}/auth/authorize`, token: `${base}/auth/token`, jwks: `${base}/auth/keys`, issuer: APPLE_ISSUER }
}

/** The user's name and address; Apple then insists on response_mode=form_post, so the code comes back in a POST. */
export const APPLE_SCOPES: ReadonlyArray<string> = ["name", "email"]

/**
 * A verified Apple ID token as GoTrue's parser reads it: Apple writes `email_verified` and `is_private_email` as
 * strings; a relay address is kept as the custom claim is_private_email.
 */
export const appleIdTokenProfile = (payload: Readonly<Record<string, unknown>>): Either.Either<ExternalProfile, AuthError> =>
  Either.map(idTokenBase(payload), ({ base, issuer }) => {
    const privateEmail = payload["is_private_email"]
    return { ...base, claims: { ...issuer, ...(privateEmail !== undefined ? { custom_claims: { is_private_email: claimTruthy(privateEmail) } } : {}) } }
  })

/**
 * The verified ID token's claims as a profile, by the ID-token grant's rules: Apple's `email_verified` and
 * `is_private_email` come as the strings "true"/"false" (or booleans); a relay address (is_private_email) is kept as
 * a custom claim. The name is not in the token: Apple posts it once, on the first consent, in the form's `user`
 * (withApplePostedUser).
 */
export const appleProfile = (claims: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> =>
  asProviderProfile(appleIdTokenProfile(claims))

/**
 * The name in the `user` field Apple posts to the callback with the code, on the user's first consent only (it is
 * in no token, and Apple never sends it again): `{"name":{"firstName":"…","lastName":"…"},"email":"…"}`. Joined as
 * GoTrue joins it, first name first; None when both parts are blank. Text that is not a JSON object is no answer of
 * Apple's, and the sign-in fails (GoTrue's fails on text that is not JSON).
 */
export const applePostedName = (posted: string): Either.Either<Option.Option<string>, string> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(posted)
  } catch {
    return Either.left("the posted user is not JSON")
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return Either.left("the posted user is not an object")
  const name = (parsed as Record<string, unknown>)["name"]
  const part = (key: string): string => {
    const value = typeof name === "object" && name !== null ? (name as Record<string, unknown>)[key] : undefined
    return typeof value === "string" ? value : ""
  }
  const joined = `${part("firstName")} ${part("lastName")}`.trim()
  return Either.right(joined === "" ? Option.none() : Option.some(joined))
}

/**
 * The profile with the first callback's name in it, as `name` and `full_name` (GoTrue's claims), so the new identity
 * and the user's metadata keep it; a later sign-in, which brings no name, leaves the user's metadata as it is.
 */
export const withApplePostedUser = (profile: ProviderProfile, posted: string): Either.Either<ProviderProfile, string> =>
  Either.map(applePostedName(posted), Option.match({
    onNone: () => profile,
    onSome: (name) => ({ ...profile, name, claims: { ...profile.claims, name, full_name: name } })
  }))

/**
 * Sign in with Apple. EXTERNAL_APPLE_CLIENT_ID is the Services ID; EXTERNAL_APPLE_SECRET is the client secret JWT
 * the operator signs with the team's key (ES256, at most six months' life), as with GoTrue.
 */
export const apple: ProviderDescriptor = {
  make: (config) => {
    const endpoints = appleEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    const base = authorizationUrl(client, endpoints.authorization, APPLE_SCOPES)
    return {
      name: "apple",
      // Apple documents no PKCE for the web flow.
      usesPkce: false,
      authorizationUrl: (request: AuthorizationRequest) => {
        const url = base(request)
        url.searchParams.set("response_mode", "form_post")
        return url
      },
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) =>
        Effect.flatMap(
          verifiedIdToken(tokens.idToken, { jwksUrl: endpoints.jwks, audience: redirectClientId(config), issuer: endpoints.issuer }),
          (claims) => mapped(appleProfile(claims))
        ),
      withPostedUser: withApplePostedUser
    }
  },
  // A native app's token: by Apple's issuer, whose keys are read under EXTERNAL_APPLE_URL like the redirect flow's.
  idToken: {
    order: 1,
    issuedBy: (issuer) => issuer === APPLE_ISSUER,
    expectedIssuer: () => Either.right(APPLE_ISSUER),
    jwksUrl: (url) => appleEndpoints(url).jwks,
    profile: appleIdTokenProfile
  }
}
