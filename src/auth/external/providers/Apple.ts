import { Effect, type Either, Option } from "effect"
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
 * a custom claim. The name is not in the token: Apple posts it once, on the first consent, in the form's `user`.
 */
export const appleProfile = (claims: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> =>
  asProviderProfile(profileFromIdToken("apple", claims))

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
      )
  }
}
