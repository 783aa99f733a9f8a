import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Either, Layer } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { type Account, Accounts } from "../accounts/Accounts.js"
import { IamError } from "../domain/IamError.js"
import {
  decideRefresh, type PresentedRefreshToken, type RefreshDecision, type RotationPolicy, sessionEnd, tokenExpiry
} from "../domain/RefreshRotation.js"
import { bearerToken as parseBearer } from "../../platform/http/Bearer.js"
import { catchSql, IamSql } from "../IamSql.js"
import { PasetoTokens, type TokenClaims, type TokenRejection } from "./PasetoTokens.js"
import { type Revocation, Revocations } from "./Revocations.js"

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

interface StoredRow {
  readonly user_id: number
  readonly family_id: string
  readonly expires_at: Date
  readonly spent_at: Date | null
  readonly revoked_at: Date | null
  readonly session_ends_at: Date | null
}

interface ChildRow {
  readonly jti: string
  readonly issued_at: Date
  readonly expires_at: Date
  readonly spent_at: Date | null
  readonly revoked_at: Date | null
}

const dateOrNull = (value: Date | null): Date | null => (value === null ? null : new Date(value))

/**
 * Sign-in sessions: token pairs, refresh rotation with reuse detection, logout, and token validation. A
 * session is a refresh family; its access tokens carry the family id, so revoking the family (logout, reuse)
 * also invalidates every access token of that sign-in at once. A session may have a fixed end (GenerateToken's
 * ttl_seconds), kept on its rows: no token of it, however often refreshed, outlives that end.
 */
export class Sessions extends Context.Tag("iam/Sessions")<Sessions, {
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
    Sessions,
    never,
    SqlClient.SqlClient | IamSql | AppConfig | Accounts | PasetoTokens | Revocations
  > = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { table } = yield* IamSql
      const { iam } = yield* AppConfig
      const accounts = yield* Accounts
      const tokens = yield* PasetoTokens
      const revocations = yield* Revocations
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const policy: RotationPolicy = { reuseIntervalMillis: Duration.toMillis(iam.refreshTokenReuseInterval) }
      const accessTtlMillis = Duration.toMillis(iam.accessTokenTtl)
      const refreshTtlMillis = Duration.toMillis(iam.refreshTokenTtl)

      const insertRefresh = (row: {
        jti: string
        family: string
        userId: number
        parent: string | null
        issuedAt: Date
        expiresAt: Date
        sessionEndsAt: Date | null
      }) =>
        sql`INSERT INTO ${sql(table.refresh_tokens)} ${sql.insert({
          jti: row.jti,
          family_id: row.family,
          user_id: row.userId,
          parent_jti: row.parent,
          issued_at: row.issuedAt,
          expires_at: row.expiresAt,
          session_ends_at: row.sessionEndsAt
        })}`

      /** A refresh token as it was recorded: signing it again with these gives the very same token. */
      interface RefreshRecord {
        readonly family: string
        readonly jti: string
        readonly issuedAt: Date
        readonly expiresAt: Date
        readonly sessionEndsAt: Date | null
      }

      // Signing is CPU work, done after the transaction that recorded the refresh token committed. The access
      // token is issued at `at`, the moment the request was decided, and ends by the session's end.
      const sign = Effect.fn("Sessions.sign")(function*(account: Account, refresh: RefreshRecord, at: Date) {
        const expiresAt = tokenExpiry(at, accessTtlMillis, refresh.sessionEndsAt)
        const roles = yield* accounts.roleNames(account.id)
        const sub = String(account.id)
        const accessToken = yield* tokens.sign({
          sub,
          jti: randomUUID(),
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

      const issue = Effect.fn("Sessions.issue")(function*(account: Account, ttl?: Duration.Duration) {
        const at = yield* now
        const sessionEndsAt = sessionEnd(at, ttl === undefined ? undefined : Duration.toMillis(ttl), refreshTtlMillis)
        const refresh: RefreshRecord = {
          family: randomUUID(),
          jti: randomUUID(),
          issuedAt: at,
          expiresAt: tokenExpiry(at, refreshTtlMillis, sessionEndsAt),
          sessionEndsAt
        }
        yield* insertRefresh({ ...refresh, userId: account.id, parent: null }).pipe(catchSql)
        return yield* sign(account, refresh, at)
      })

      const revokeFamilies = (families: ReadonlyArray<string>, at: Date) =>
        Effect.gen(function*() {
          if (families.length === 0) return [] as ReadonlyArray<Revocation>
          yield* sql`UPDATE ${sql(table.refresh_tokens)} SET revoked_at = ${at}
            WHERE family_id IN ${sql.in(families)} AND revoked_at IS NULL`
          // Every access token of a family expires within one access TTL of now.
          const entries = families.map((id): Revocation => ({ id, kind: "family", expiresAt: tokenExpiry(at, accessTtlMillis, null) }))
          yield* revocations.record(entries)
          return entries
        })

      const unauthenticated = (reason: TokenRejection | "unknown") =>
        IamError.unauthenticated(reason === "unknown" ? "refresh token is not recognised" : REJECTED_MESSAGE[reason])

      const refresh = Effect.fn("Sessions.refresh")(function*(refreshToken: string) {
        const verified = yield* tokens.verify(refreshToken)
        if (Either.isLeft(verified)) return yield* unauthenticated(verified.left)
        const claims = verified.right
        if (claims.typ !== "refresh") return yield* unauthenticated("wrong_type")
        const at = yield* now
        // The row lock orders concurrent refreshes of one token, on any instance: the first rotates it; each of the
        // others is granted the lock once that rotation committed, and sees the token spent and its child.
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<StoredRow>`SELECT user_id, family_id, expires_at, spent_at, revoked_at, session_ends_at
            FROM ${sql(table.refresh_tokens)} WHERE jti = ${claims.jti} FOR UPDATE`
          const row = rows[0]
          // Read after the lock was granted (a statement of its own, with its own snapshot): the child of a
          // rotation that committed while this one waited is visible.
          const child = row === undefined || row.spent_at === null ? undefined : (yield* sql<ChildRow>`
            SELECT jti, issued_at, expires_at, spent_at, revoked_at FROM ${sql(table.refresh_tokens)}
            WHERE parent_jti = ${claims.jti}`)[0]
          const presented: PresentedRefreshToken | undefined = row === undefined ? undefined : {
            expiresAt: new Date(row.expires_at),
            spentAt: dateOrNull(row.spent_at),
            revokedAt: dateOrNull(row.revoked_at),
            child: child === undefined ? undefined : {
              expiresAt: new Date(child.expires_at),
              spentAt: dateOrNull(child.spent_at),
              revokedAt: dateOrNull(child.revoked_at)
            }
          }
          const decision: RefreshDecision = decideRefresh(presented, at, policy)
          const sessionEndsAt = row === undefined ? null : dateOrNull(row.session_ends_at)
          let issued: RefreshRecord | undefined
          if (decision._tag === "Rotate") {
            issued = {
              family: row!.family_id,
              jti: randomUUID(),
              issuedAt: at,
              expiresAt: tokenExpiry(at, refreshTtlMillis, sessionEndsAt),
              sessionEndsAt
            }
            yield* sql`UPDATE ${sql(table.refresh_tokens)} SET spent_at = ${at} WHERE jti = ${claims.jti}`
            yield* insertRefresh({ ...issued, userId: row!.user_id, parent: claims.jti })
          } else if (decision._tag === "ReturnChild") {
            issued = {
              family: row!.family_id,
              jti: child!.jti,
              issuedAt: new Date(child!.issued_at),
              expiresAt: new Date(child!.expires_at),
              sessionEndsAt
            }
          }
          const revoked = decision._tag === "ReuseDetected" ? yield* revokeFamilies([row!.family_id], at) : []
          return { decision, userId: row?.user_id, family: row?.family_id, issued, revoked }
        })).pipe(catchSql)
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

      const validate = Effect.fn("Sessions.validate")(function*(token: string) {
        const verified = yield* tokens.verify(token)
        if (Either.isLeft(verified)) return { valid: false, reason: verified.left } satisfies Validation
        const claims = verified.right
        if (claims.typ !== "access") return { valid: false, reason: "wrong_type" } satisfies Validation
        if (yield* revocations.isRevoked([claims.jti, claims.fam])) return { valid: false, reason: "revoked" } satisfies Validation
        return { valid: true, claims } satisfies Validation
      })

      const authenticate = Effect.fn("Sessions.authenticate")(function*(authorization: string | undefined) {
        const token = bearerToken(authorization)
        if (token === undefined) return yield* IamError.unauthenticated("a bearer access token is required")
        const result = yield* validate(token)
        if (!result.valid) return yield* IamError.unauthenticated(REJECTED_MESSAGE[result.reason])
        return { userId: Number(result.claims.sub), claims: result.claims } satisfies Caller
      })

      const logout = Effect.fn("Sessions.logout")(function*(input: {
        readonly accessToken: string | undefined
        readonly refreshToken: string
        readonly allSessions: boolean
      }) {
        if (input.accessToken === undefined) return yield* IamError.unauthenticated("an access token is required")
        const verified = yield* tokens.verify(input.accessToken)
        if (Either.isLeft(verified)) return yield* IamError.unauthenticated(REJECTED_MESSAGE[verified.left])
        const claims = verified.right
        if (claims.typ !== "access") return yield* IamError.unauthenticated(REJECTED_MESSAGE.wrong_type)
        const families = [claims.fam]
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
            families.push(other.fam)
          }
        }
        const at = yield* now
        const revoked = yield* sql.withTransaction(Effect.gen(function*() {
          const all = input.allSessions
            ? (yield* sql<{ family_id: string }>`SELECT DISTINCT family_id FROM ${sql(table.refresh_tokens)}
                WHERE user_id = ${Number(claims.sub)} AND revoked_at IS NULL AND expires_at > ${at}`).map((r) => r.family_id)
            : []
          const access: Revocation = { id: claims.jti, kind: "access", expiresAt: claims.exp }
          yield* revocations.record([access])
          return [access, ...(yield* revokeFamilies([...new Set([...families, ...all])], at))]
        })).pipe(catchSql)
        yield* revocations.remember(revoked)
      })

      return { issue, refresh, logout, validate, authenticate }
    })
  )
}
