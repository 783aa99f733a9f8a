import { Clock, Effect, Either } from "effect"
import { createRemoteJWKSet, jwtVerify } from "jose"
import type { AuthError } from "../domain/AuthError.js"
import type { ExternalProfile } from "../domain/ExternalLink.js"
import { ProviderFailure, type ProviderProfile } from "./OAuthProvider.js"
import { PROVIDER_TIMEOUT } from "./ProviderKit.js"

/*
 * The ID token a provider's token endpoint hands back: for providers whose profile is that token (apple, azure),
 * and keycloak's, which vouches for the userinfo answer. Verified against the provider's published keys like
 * POST /token?grant_type=id_token verifies a native app's, and mapped by the same rules, so one account signs in as
 * the same identity either way.
 */

// Providers sign with asymmetric keys; a symmetric or unsigned token is never one of theirs.
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

/** One key set per URL for the process: jose refetches it on an unknown kid (key rotation), with a cooldown. */
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>()
const keySet = (url: string) => {
  const known = keySets.get(url)
  if (known !== undefined) return known
  const created = createRemoteJWKSet(new URL(url), { timeoutDuration: 5_000 })
  keySets.set(url, created)
  return created
}

export interface IdTokenExpectations {
  readonly jwksUrl: string
  /** Our client id: the token must be issued to us. */
  readonly audience: string
  /** The issuer the token must have, or a rule for providers whose issuer depends on the token (Azure's tenants). */
  readonly issuer: string | ((claims: Readonly<Record<string, unknown>>) => boolean)
}

/** The token's claims once signature, expiry, audience and issuer check out; a failure of the profile step otherwise. */
export const verifiedIdToken = (idToken: string | null | undefined, expect: IdTokenExpectations) =>
  Effect.gen(function*() {
    if (idToken === null || idToken === undefined || idToken === "") {
      return yield* new ProviderFailure({ step: "profile", reason: "the token endpoint sent no id_token" })
    }
    const now = yield* Clock.currentTimeMillis
    const { payload } = yield* Effect.tryPromise({
      try: () =>
        jwtVerify(idToken, keySet(expect.jwksUrl), {
          algorithms: ALGORITHMS,
          audience: expect.audience,
          requiredClaims: ["exp", "sub"],
          currentDate: new Date(now),
          ...(typeof expect.issuer === "string" ? { issuer: expect.issuer } : {})
        }),
      // jose's own message only: its claim errors carry the token's payload as their cause, not for a log line.
      catch: (cause) => new ProviderFailure({ step: "profile", reason: `id_token: ${cause instanceof Error ? cause.message : "unverifiable"}` })
    }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "profile", reason: "timed out" }) }))
    const claims = payload as Readonly<Record<string, unknown>>
    if (typeof expect.issuer === "function" && !expect.issuer(claims)) {
      return yield* new ProviderFailure({ step: "profile", reason: `id_token: unexpected issuer ${String(claims["iss"])}` })
    }
    return claims
  })

/** The ID-token grant's profile (absent fields) as a provider's profile (null fields). */
export const asProviderProfile = (result: Either.Either<ExternalProfile, AuthError>): Either.Either<ProviderProfile, string> =>
  Either.match(result, {
    onLeft: (error) => Either.left(error.message),
    onRight: (profile) =>
      Either.right({
        providerId: profile.providerId,
        email: profile.email ?? null,
        emailVerified: profile.email !== undefined && profile.emailVerified,
        name: profile.name ?? null,
        avatarUrl: profile.avatarUrl ?? null,
        claims: profile.claims
      })
  })
