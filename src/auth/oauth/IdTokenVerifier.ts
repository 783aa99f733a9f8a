import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createRemoteJWKSet, jwtVerify } from "jose"

/*
 * The one place a provider's ID token is verified against the provider's published keys: for POST
 * /token?grant_type=id_token (a native app's token) and for the callback of the providers whose profile is that
 * token (apple, azure) or is vouched for by it (keycloak). One algorithm list and one key-set cache serve both, so
 * one account signs in as the same identity either way and a provider's keys are fetched once for the two.
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

/** Why a token was not accepted, in jose's words; each caller decides how much of it its client hears. */
export class IdTokenRejected extends Data.TaggedError("IdTokenRejected")<{ readonly reason: string }> {}

export interface IdTokenExpectations {
  readonly jwksUrl: string
  /** The issuer the token must have, or a rule for providers whose issuer depends on the token (Azure's tenants). */
  readonly issuer: string | ((claims: Readonly<Record<string, unknown>>) => boolean)
  /** Our client id, when the token must be issued to it here (the grant checks its list of client ids itself). */
  readonly audience?: string
  /** Claims the token must carry besides a valid signature (`exp` at least). */
  readonly requiredClaims: ReadonlyArray<string>
}

export interface VerifiedIdToken {
  readonly claims: Readonly<Record<string, unknown>>
  /** The algorithm it was signed with, which OpenID Connect's at_hash depends on. */
  readonly algorithm: string
}

/** The token's claims once signature, expiry, issuer (and audience, when given) check out. */
export const verifyIdToken = (idToken: string, expect: IdTokenExpectations): Effect.Effect<VerifiedIdToken, IdTokenRejected> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const { payload, protectedHeader } = yield* Effect.tryPromise({
      try: () =>
        jwtVerify(idToken, keySet(expect.jwksUrl), {
          algorithms: ALGORITHMS,
          requiredClaims: [...expect.requiredClaims],
          currentDate: new Date(now),
          ...(expect.audience !== undefined ? { audience: expect.audience } : {}),
          ...(typeof expect.issuer === "string" ? { issuer: expect.issuer } : {})
        }),
      // jose's own message only: its claim errors carry the token's payload as their cause, not for a log line.
      catch: (cause) => new IdTokenRejected({ reason: cause instanceof Error ? cause.message : "unverifiable" })
    })
    const claims = payload as Readonly<Record<string, unknown>>
    if (typeof expect.issuer === "function" && !expect.issuer(claims)) {
      return yield* new IdTokenRejected({ reason: `unexpected issuer ${String(claims["iss"])}` })
    }
    return { claims, algorithm: protectedHeader.alg }
  })
