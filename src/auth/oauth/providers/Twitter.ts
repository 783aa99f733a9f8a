import { createHmac } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import OAuth from "oauth-1.0a"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import {
  ProviderFailure,
  type ProviderProfile,
  type ProviderTokens,
  stringClaim,
  withPassThrough
} from "../OAuthProvider.js"
import { asObject, mapped, PROVIDER_TIMEOUT, reasonOf, redirectClientId } from "../ProviderKit.js"

/**
 * Twitter's OAuth 1.0a endpoints and the v1.1 API, all on api.twitter.com; EXTERNAL_TWITTER_URL replaces that host:
 * `<url>/oauth/request_token`, `<url>/oauth/authenticate`, `<url>/oauth/access_token`,
 * `<url>/1.1/account/verify_credentials.json`.
 */
export const twitterEndpoints = (baseUrl: string | undefined) => {
  const api = (baseUrl ?? "https://api.twitter.com").replace(/\/+$/, "")
  return {
    requestToken: `${api}/oauth/request_token`,
    authenticate: `${api}/oauth/authenticate`,
    accessToken: `${api}/oauth/access_token`,
    verifyCredentials: `${api}/1.1/account/verify_credentials.json?include_email=true`,
    issuer: `${api}/1.1`
  }
}

/**
 * `GET account/verify_credentials.json?include_email=true` as a profile. Twitter returns `email` only to apps granted
 * the email permission and only when the address is verified ("if the email address is not verified, null will be
 * returned", API reference), so an address present is a verified one. `id_str` is the subject: the numeric `id`
 * outgrows a double.
 */
export const twitterProfile = (user: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(user, "id_str")
  if (id === null) return Either.left("user has no id_str")
  const email = stringClaim(user, "email")
  const emailVerified = email !== null
  const name = stringClaim(user, "name")
  const handle = stringClaim(user, "screen_name")
  const picture = stringClaim(user, "profile_image_url_https")
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (handle !== null) Object.assign(claims, { preferred_username: handle, user_name: handle, nickname: handle })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: id, email, emailVerified, name, avatarUrl: picture, claims })
}

/** A form-encoded answer (`oauth_token=…&oauth_token_secret=…`) as an object. */
const formOf = (text: string): Readonly<Record<string, string>> => Object.fromEntries(new URLSearchParams(text))

/**
 * A request signed with HMAC-SHA1 (RFC 5849 §3.4.2), its protocol parameters in the Authorization header. `extra`
 * are oauth_* parameters that go in the header and the signature both (oauth_callback, oauth_verifier).
 */
const signedFetch = (
  oauth: OAuth,
  step: ProviderFailure["step"],
  method: "GET" | "POST",
  url: string,
  token: OAuth.Token | undefined,
  extra: Readonly<Record<string, string>> = {}
) =>
  Effect.tryPromise({
    try: async (signal) => {
      const authorization = oauth.toHeader({ ...oauth.authorize({ url, method, data: { ...extra } }, token), ...extra })
      const response = await fetch(url, { method, headers: { ...authorization, accept: "application/json" }, signal })
      const text = await response.text()
      if (!response.ok) throw new Error(`${url} answered ${response.status}`)
      return text
    },
    catch: (cause) => new ProviderFailure({ step, reason: reasonOf(cause) })
  }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step, reason: "timed out" }) }))

/**
 * Twitter with OAuth 1.0a, as GoTrue signs in with it: EXTERNAL_TWITTER_CLIENT_ID and _SECRET are the app's consumer
 * key and secret, so an existing GoTrue configuration keeps working. The sign-in starts with a request token
 * (`begin`), whose key names the flow when Twitter sends the browser back with `oauth_token` and `oauth_verifier`.
 */
export const twitter: ProviderDescriptor = {
  make: (config) => {
    const endpoints = twitterEndpoints(Option.getOrUndefined(config.url))
    const oauth = new OAuth({
      consumer: { key: redirectClientId(config), secret: Option.match(config.secret, { onNone: () => "", onSome: Redacted.value }) },
      signature_method: "HMAC-SHA1",
      hash_function: (base, key) => createHmac("sha1", key).update(base).digest("base64")
    })
    const authenticateUrl = (requestToken: string, passThrough: ReadonlyArray<readonly [string, string]>) => {
      const url = new URL(endpoints.authenticate)
      url.searchParams.set("oauth_token", requestToken)
      return withPassThrough(url, passThrough)
    }
    return {
      name: "twitter",
      usesPkce: false,
      // Twitter's page needs a request token, which only `begin` has: without one this is the bare page.
      authorizationUrl: ({ passThrough }) => withPassThrough(new URL(endpoints.authenticate), passThrough),
      // OAuth 1.0a has no scopes (the app's permissions are set in Twitter's developer portal); `scopes` is not sent.
      begin: ({ passThrough }) =>
        Effect.flatMap(
          signedFetch(oauth, "exchange", "POST", endpoints.requestToken, undefined, { oauth_callback: config.redirectUri }),
          (text) => {
            const answer = formOf(text)
            const token = answer["oauth_token"] ?? ""
            const secret = answer["oauth_token_secret"] ?? ""
            if (token === "" || secret === "" || answer["oauth_callback_confirmed"] !== "true") {
              return Effect.fail(new ProviderFailure({ step: "exchange", reason: "request_token answer unusable" }))
            }
            // The token secret signs the access-token request; it is kept with the flow and comes back as the verifier.
            const verifier = new URLSearchParams({ oauth_token: token, oauth_token_secret: secret }).toString()
            return Effect.succeed({ url: authenticateUrl(token, passThrough), handle: token, verifier })
          }
        ),
      exchange: (oauthVerifier, kept) => {
        const request = formOf(kept ?? "")
        const token = { key: request["oauth_token"] ?? "", secret: request["oauth_token_secret"] ?? "" }
        return Effect.flatMap(
          signedFetch(oauth, "exchange", "POST", endpoints.accessToken, token, { oauth_verifier: oauthVerifier }),
          (text): Effect.Effect<ProviderTokens, ProviderFailure> => {
            const answer = formOf(text)
            const accessToken = answer["oauth_token"] ?? ""
            if (accessToken === "" || (answer["oauth_token_secret"] ?? "") === "") {
              return Effect.fail(new ProviderFailure({ step: "exchange", reason: "access_token answer unusable" }))
            }
            // As GoTrue: the app gets the token as provider_token, and no provider_refresh_token (OAuth 1.0a has
            // none); the token secret stays here, to sign the profile request.
            return Effect.succeed({ accessToken, refreshToken: null, raw: answer })
          }
        )
      },
      profile: (tokens) =>
        Effect.flatMap(
          signedFetch(oauth, "profile", "GET", endpoints.verifyCredentials, {
            key: tokens.accessToken,
            secret: typeof tokens.raw?.["oauth_token_secret"] === "string" ? tokens.raw["oauth_token_secret"] : ""
          }),
          (text) =>
            Effect.flatMap(
              Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => new ProviderFailure({ step: "profile", reason: "not JSON" }) }),
              (user) => mapped(twitterProfile(asObject(user), endpoints.issuer))
            )
        )
    }
  }
}
