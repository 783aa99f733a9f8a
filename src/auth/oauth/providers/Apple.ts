import { Effect, Either, Option } from "effect"
import type { OAuthProviderConfig } from "../../../config/AppConfig.js"
import { APPLE_ISSUER, profileFromIdToken } from "../../domain/IdToken.js"
import type { AuthorizationRequest, OAuthProvider, ProviderProfile } from "../OAuthProvider.js"
import { asProviderProfile, verifiedIdToken } from "../ProviderIdToken.js"
import { authorizationUrl, clientFor, exchangeWith, mapped, redirectClientId } from "../ProviderKit.js"

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
 * The verified ID token's claims as a profile, by the ID-token grant's rules: Apple's `email_verified` and
 * `is_private_email` come as the strings "true"/"false" (or booleans); a relay address (is_private_email) is kept as
 * a custom claim. The name is not in the token: Apple posts it once, on the first consent, in the form's `user`
 * (withApplePostedUser).
 */
export const appleProfile = (claims: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> =>
  asProviderProfile(profileFromIdToken("apple", claims))

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
export const apple = (config: OAuthProviderConfig): OAuthProvider => {
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
}
