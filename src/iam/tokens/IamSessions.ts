import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { bearerToken as parseBearer } from "../../platform/http/Bearer.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { type Account, Accounts } from "../accounts/Accounts.js"
import { IamError } from "../domain/IamError.js"
import { decideRefresh, type RefreshDecision, type RotationPolicy, sessionEnd, tokenExpiry } from "../domain/RefreshRotation.js"
import { catchSql } from "../IamSql.js"
import { PasetoTokens, type TokenClaims, type TokenRejection } from "./PasetoTokens.js"
import { type Revocation, Revocations } from "./Revocations.js"
import { type NewFamilyToken, TokenFamiliesRepo } from "../store/TokenFamiliesRepo.js"
import { traced } from "../../platform/Traced.js"

/** A freshly issued access and refresh token. The strings go to the client and nowhere else (no logs). */
export interface IssuedTokens {
  readonly accessToken: string
  readonly refreshToken: string
  readonly expiresAt: Date
  readonly refreshExpiresAt: Date
  readonly expiresIn: number
}

/** The verified bearer of an access token. */
export interface Caller {
  readonly userId: number
  readonly claims: TokenClaims
}

export type Validation =
  | { readonly valid: true; readonly claims: TokenClaims }
  | { readonly valid: false; readonly reason: TokenRejection }

const REJECTED_MESSAGE: Readonly<Record<TokenRejection, string>> = {
  malformed: "token is malformed",
  invalid_signature: "token signature is invalid",
  unknown_key: "token was signed by an unknown key",
  expired: "token has expired",
  revoked: "token has been revoked",
  wrong_type: "wrong token type"
}

/** `Authorization: Bearer <token>`; a bare token is accepted too, as the original service's clients send it. */
export const bearerToken = (authorization: string | undefined): string | undefined => parseBearer(authorization, "lenient")

/**
 * IAM's sign-in sessions: token pairs, refresh rotation with reuse detection, logout, and token validation. A
 * session is a refresh family (TokenFamiliesRepo); its access tokens carry the family id, so revoking the family
 * (logout, reuse) also invalidates every access token of that sign-in at once. A session may have a fixed end
 * (GenerateToken's ttl_seconds), kept on its rows: no token of it, however often refreshed, outlives that end.
 */
export class IamSessions extends Context.Tag("iam/IamSessions")<IamSessions, {
  /**
   * Starts a session. With `ttl` the session ends `ttl` from now (at most the refresh-token lifetime): its
   * refresh token, and every access or refresh token a refresh of it gives, expire by then.
   */
  readonly issue: (account: Account, ttl?: Duration.Duration) => Effect.Effect<IssuedTokens, IamError>
  readonly refresh: (refreshToken: string) => Effect.Effect<IssuedTokens, IamError>
  readonly logout: (input: {
    readonly accessToken: string | undefined
    readonly refreshToken: string
    readonly allSessions: boolean
  }) => Effect.Effect<void, IamError>
  readonly validate: (token: string) => Effect.Effect<Validation>
  /** UNAUTHENTICATED unless the header carries a valid, unrevoked access token. */
  readonly authenticate: (authorization: string | undefined) => Effect.Effect<Caller, IamError>
}>() {
  static readonly layer: Layer.Layer<
    IamSessions,
    never,
    TokenFamiliesRepo | Transactions | SecureRandom | IamConfig | Accounts | PasetoTokens | Revocations
  > = Layer.effect(
    IamSessions,
    Effect.gen(function*() {
      const families = yield* TokenFamiliesRepo
      const transactions = yield* Transactions
      const random = yield* SecureRandom
      const iam = yield* IamConfig
      const accounts = yield* Accounts
      const tokens = yield* PasetoTokens
      const revocations = yield* Revocations
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const policy: RotationPolicy = { reuseIntervalMillis: Duration.toMillis(iam.refreshTokenReuseInterval) }
      const accessTtlMillis = Duration.toMillis(iam.accessTokenTtl)
      const refreshTtlMillis = Duration.toMillis(iam.refreshTokenTtl)

      // Signing is CPU work, done after the transaction that recorded the refresh token committed. The access
      // token is issued at `at`, the moment the request was decided, and ends by the session's end.
      const sign = traced("IamSessions.sign")(function*(account: Account, refresh: NewFamilyToken, at: Date) {
        const expiresAt = tokenExpiry(at, accessTtlMillis, refresh.sessionEndsAt)
        const roles = yield* accounts.roleNames(account.id)
        const sub = String(account.id)
        const accessToken = yield* tokens.sign({
          sub,
          jti: yield* random.uuid(),
          typ: "access",
          fam: refresh.family,
          exp: expiresAt,
          username: account.username,
          roles
        }, at)
        const refreshToken = yield* tokens.sign(
          { sub, jti: refresh.jti, typ: "refresh", fam: refresh.family, exp: refresh.expiresAt },
          refresh.issuedAt
        )
        return {
          accessToken,
          refreshToken,
          expiresAt,
          refreshExpiresAt: refresh.expiresAt,
          expiresIn: Math.max(0, Math.floor((expiresAt.getTime() - at.getTime()) / 1000))
        } satisfies IssuedTokens
      })

      const issue = traced("IamSessions.issue")(function*(account: Account, ttl?: Duration.Duration) {
        const at = yield* now
        const sessionEndsAt = sessionEnd(at, ttl === undefined ? undefined : Duration.toMillis(ttl), refreshTtlMillis)
        const refresh: NewFamilyToken = {
          family: yield* random.uuid(),
          jti: yield* random.uuid(),
          userId: account.id,
          parent: null,
          issuedAt: at,
          expiresAt: tokenExpiry(at, refreshTtlMillis, sessionEndsAt),
          sessionEndsAt
        }
        yield* families.insert(refresh)
        return yield* sign(account, refresh, at)
      })

      const revokeFamilies = (ids: ReadonlyArray<string>, at: Date) =>
        Effect.gen(function*() {
          if (ids.length === 0) return [] as ReadonlyArray<Revocation>
          yield* families.revokeFamilies(ids, at)
          // Every access token of a family expires within one access TTL of now.
          const entries = ids.map((id): Revocation => ({ id, kind: "family", expiresAt: tokenExpiry(at, accessTtlMillis, null) }))
          yield* revocations.record(entries)
          return entries
        })

      const unauthenticated = (reason: TokenRejection | "unknown") =>
        IamError.unauthenticated(reason === "unknown" ? "refresh token is not recognised" : REJECTED_MESSAGE[reason])

      const refresh = traced("IamSessions.refresh")(function*(refreshToken: string) {
        const verified = yield* tokens.verify(refreshToken)
        if (Either.isLeft(verified)) return yield* unauthenticated(verified.left)
        const claims = verified.right
        if (claims.typ !== "refresh") return yield* unauthenticated("wrong_type")
        const at = yield* now
        // The presented token stays locked until the transaction ends (TokenFamiliesRepo.lockForRefresh): concurrent
        // refreshes of one token, on any instance, are decided one after the other.
        const outcome = yield* catchSql(transactions.run(Effect.gen(function*() {
          const locked = yield* families.lockForRefresh(claims.jti)
          const decision: RefreshDecision = decideRefresh(locked === undefined ? undefined : { ...locked.token, child: locked.child }, at, policy)
          let issued: NewFamilyToken | undefined
          if (locked !== undefined && decision._tag === "Rotate") {
            const { token } = locked
            issued = {
              family: token.family,
              jti: yield* random.uuid(),
              userId: token.userId,
              parent: token.jti,
              issuedAt: at,
              expiresAt: tokenExpiry(at, refreshTtlMillis, token.sessionEndsAt),
              sessionEndsAt: token.sessionEndsAt
            }
            yield* families.spend(token.jti, at)
            yield* families.insert(issued)
          } else if (locked?.child !== undefined && decision._tag === "ReturnChild") {
            issued = locked.child
          }
          const revoked = locked !== undefined && decision._tag === "ReuseDetected" ? yield* revokeFamilies([locked.token.family], at) : []
          return { decision, userId: locked?.token.userId, family: locked?.token.family, issued, revoked }
        })))
        yield* revocations.remember(outcome.revoked)
        if (outcome.decision._tag === "ReuseDetected") {
          yield* Effect.logWarning("iam: refresh token reuse detected; session revoked").pipe(
            Effect.annotateLogs({ user_id: outcome.userId, family: outcome.family })
          )
          return yield* IamError.unauthenticated("refresh token was already used; the session has been revoked")
        }
        if (outcome.decision._tag === "Reject") return yield* unauthenticated(outcome.decision.reason)
        const account = yield* accounts.find(outcome.userId!)
        if (account === undefined) return yield* unauthenticated("unknown")
        return yield* sign(account, outcome.issued!, at)
      })

      const validate = traced("IamSessions.validate")(function*(token: string) {
        const verified = yield* tokens.verify(token)
        if (Either.isLeft(verified)) return { valid: false, reason: verified.left } satisfies Validation
        const claims = verified.right
        if (claims.typ !== "access") return { valid: false, reason: "wrong_type" } satisfies Validation
        if (yield* revocations.isRevoked([claims.jti, claims.fam])) return { valid: false, reason: "revoked" } satisfies Validation
        return { valid: true, claims } satisfies Validation
      })

      const authenticate = traced("IamSessions.authenticate")(function*(authorization: string | undefined) {
        const token = bearerToken(authorization)
        if (token === undefined) return yield* IamError.unauthenticated("a bearer access token is required")
        const result = yield* validate(token)
        if (!result.valid) return yield* IamError.unauthenticated(REJECTED_MESSAGE[result.reason])
        return { userId: Number(result.claims.sub), claims: result.claims } satisfies Caller
      })

      const logout = traced("IamSessions.logout")(function*(input: {
        readonly accessToken: string | undefined
        readonly refreshToken: string
        readonly allSessions: boolean
      }) {
        if (input.accessToken === undefined) return yield* IamError.unauthenticated("an access token is required")
        const verified = yield* tokens.verify(input.accessToken)
        if (Either.isLeft(verified)) return yield* IamError.unauthenticated(REJECTED_MESSAGE[verified.left])
        const claims = verified.right
        if (claims.typ !== "access") return yield* IamError.unauthenticated(REJECTED_MESSAGE.wrong_type)
        const named = [claims.fam]
        if (input.refreshToken !== "") {
          const refresh = yield* tokens.verify(input.refreshToken)
          // An expired refresh token can still be logged out; a forged or foreign one cannot.
          const other = Either.isRight(refresh) ? refresh.right : undefined
          if (other === undefined && Either.isLeft(refresh) && refresh.left !== "expired") {
            return yield* IamError.invalid("refresh_token is not a valid refresh token")
          }
          if (other !== undefined) {
            if (other.typ !== "refresh" || other.sub !== claims.sub) {
              return yield* IamError.invalid("refresh_token does not belong to the caller")
            }
            named.push(other.fam)
          }
        }
        const at = yield* now
        const revoked = yield* catchSql(transactions.run(Effect.gen(function*() {
          const all = input.allSessions ? yield* families.openFamiliesOf(Number(claims.sub), at) : []
          const access: Revocation = { id: claims.jti, kind: "access", expiresAt: claims.exp }
          yield* revocations.record([access])
          return [access, ...(yield* revokeFamilies([...new Set([...named, ...all])], at))]
        })))
        yield* revocations.remember(revoked)
      })

      return { issue, refresh, logout, validate, authenticate }
    })
  )
}
