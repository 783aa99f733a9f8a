import { randomBytes } from "node:crypto"
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Redacted } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { encodeSignedRefreshToken } from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import {
  deriveFirstFormRefreshToken,
  digestRefreshToken,
  refreshTokenKey,
  sessionSigningKey
} from "../../../src/auth/sessions/RefreshTokenCodec.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { Users } from "../../../src/auth/users/Users.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { PlatformConfig } from "../../../src/config/PlatformConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/*
 * Plan §3.1: a Gatehouse refresh token whose row housekeeping deleted is still recognised, by its signature with the
 * session's derived key, and judged as the reuse it must have been. Tokens of other forms (Gatehouse's first form,
 * GoTrue's legacy ones) cannot be recognised without their row and are not swept; a session holding a key
 * export-sessions wrote keeps GoTrue's counter rules.
 */

const NOW = new Date(Date.UTC(2030, 0, 1))
const later = (ms: number) => new Date(NOW.getTime() + ms)

const Setup = Users.Default.pipe(
  Layer.provideMerge(SecureRandom.Live),
  Layer.provideMerge(configLayer(testConfig())),
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const sessionsWith = (rotation: boolean) => {
  const config = testConfig({
    AUTH_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: String(rotation),
    AUTH_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10"
  })
  return Effect.provide(Sessions, Sessions.Default.pipe(Layer.provide(configLayer(config))))
}

const tables = Effect.map(PlatformConfig, (config) => authTables(config.db.namespace))

/** A user with one session, refreshed twice: [root, child, grandchild (current)]. */
const family = (sessions: Sessions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const users = yield* Users
    const user = yield* users.create({
      aud: "authenticated",
      role: "authenticated",
      email: `swept-${randomUUID()}@example.com`,
      phone: null,
      encryptedPassword: null,
      userMetadata: {},
      provider: "email",
      emailConfirmedAt: NOW,
      phoneConfirmedAt: null,
      isAnonymous: false,
      madeBy: "signup",
      now: NOW
    })
    const started = yield* sql.withTransaction(sessions.start(user.id, "password", NOW))
    const child = yield* sessions.refresh(started.refreshToken, NOW)
    const grandchild = yield* sessions.refresh(child.refreshToken, NOW)
    return { sessionId: started.sessionId, tokens: [started.refreshToken, child.refreshToken, grandchild.refreshToken] as const }
  })

/** What housekeeping does to a row it may sweep. */
const deleteRowOf = (token: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    const deleted = yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE token = ${digestRefreshToken(token)} RETURNING id`
    expect(deleted.length).toBe(1)
  })

const sessionLives = (sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    const rows = yield* sql`SELECT 1 FROM ${sql(t.sessions)} WHERE id = ${sessionId}`
    return rows.length === 1
  })

const codeOf = <A>(result: Either.Either<A, { readonly code: string }>) => (Either.isLeft(result) ? result.left.code : "issued")

layer(Setup, { timeout: 60_000 })("swept refresh tokens", (it) => {
  it.effect("with rotation on, a swept token is reuse: refused, and the session ends with every token", () =>
    Effect.gen(function*() {
      const sessions = yield* sessionsWith(true)
      const { sessionId, tokens } = yield* family(sessions)
      yield* deleteRowOf(tokens[0])
      // Long past the interval, and also within it: a swept row was never the parent of the current token.
      expect(codeOf(yield* Effect.either(sessions.refresh(tokens[0], later(1))))).toBe("refresh_token_already_used")
      expect(yield* sessionLives(sessionId)).toBe(false)
      expect(codeOf(yield* Effect.either(sessions.refresh(tokens[2], later(2))))).toBe("refresh_token_not_found")
    }))

  it.effect("with rotation off, a swept token is AlreadyUsed and the session lives on", () =>
    Effect.gen(function*() {
      const sessions = yield* sessionsWith(false)
      const { sessionId, tokens } = yield* family(sessions)
      yield* deleteRowOf(tokens[0])
      expect(codeOf(yield* Effect.either(sessions.refresh(tokens[0], later(60_000))))).toBe("refresh_token_already_used")
      expect(yield* sessionLives(sessionId)).toBe(true)
      expect(codeOf(yield* Effect.either(sessions.refresh(tokens[2], later(60_000))))).toBe("issued")
    }))

  it.effect("in a session holding GoTrue's key and counter, a Gatehouse token without its row is GoTrue's to judge: unknown, and ends nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const sessions = yield* sessionsWith(true)
      const { sessionId, tokens } = yield* family(sessions)
      // As an adopted session GoTrue went on signing with a random key of its own: housekeeping sweeps no row of it.
      yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_hmac_key = ${randomBytes(32).toString("base64url")},
        refresh_token_counter = 1 WHERE id = ${sessionId}`
      yield* deleteRowOf(tokens[0])
      expect(codeOf(yield* Effect.either(sessions.refresh(tokens[0], later(1))))).toBe("refresh_token_not_found")
      expect(yield* sessionLives(sessionId)).toBe(true)
    }))

  it.effect("a token signed with another key for a live session stays unknown, and ends nothing", () =>
    Effect.gen(function*() {
      const sessions = yield* sessionsWith(true)
      const { sessionId } = yield* family(sessions)
      const forged = encodeSignedRefreshToken(sessionSigningKey(refreshTokenKey("another secret"), sessionId), sessionId, 1n)
      expect(codeOf(yield* Effect.either(sessions.refresh(forged, later(1))))).toBe("refresh_token_not_found")
      expect(yield* sessionLives(sessionId)).toBe(true)
    }))

  it.effect("a first-form (43-character) token without its row is unknown: not recognisable, so never swept", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const sessions = yield* sessionsWith(true)
      const { sessionId } = yield* family(sessions)
      const key = refreshTokenKey(Redacted.value(testConfig().jwt.secret))
      const first = deriveFirstFormRefreshToken(key, sessionId, "999999")
      expect(first).toHaveLength(43)
      // With its row (revoked, the parent of nothing) it is reuse, as ever.
      const [row] = yield* sql<{ user_id: string }>`SELECT user_id FROM ${sql(t.sessions)} WHERE id = ${sessionId}`
      yield* sql`INSERT INTO ${sql(t.refresh_tokens)} (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
        VALUES ('00000000-0000-0000-0000-000000000000', 999999, ${digestRefreshToken(first)}, ${row!.user_id}, true, ${NOW}, ${NOW}, NULL, ${sessionId})`
      yield* deleteRowOf(first)
      expect(codeOf(yield* Effect.either(sessions.refresh(first, later(1))))).toBe("refresh_token_not_found")
      expect(yield* sessionLives(sessionId)).toBe(true)
    }))

  it.effect("a GoTrue legacy (12-character) token without its row is unknown and ends nothing", () =>
    Effect.gen(function*() {
      const sessions = yield* sessionsWith(true)
      const { sessionId } = yield* family(sessions)
      expect(codeOf(yield* Effect.either(sessions.refresh("abcdefghij12", later(1))))).toBe("refresh_token_not_found")
      expect(yield* sessionLives(sessionId)).toBe(true)
    }))

  it.effect("a session holding the key export-sessions wrote keeps GoTrue's counter rules for a token without a row", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const sessions = yield* sessionsWith(true)
      const { sessionId, tokens } = yield* family(sessions)
      const key = refreshTokenKey(Redacted.value(testConfig().jwt.secret))
      // export-sessions: the derived key and the current row's id as GoTrue's key and counter.
      const [current] = yield* sql<{ id: string }>`
        SELECT id::text AS id FROM ${sql(t.refresh_tokens)} WHERE session_id = ${sessionId} AND revoked = false`
      yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_hmac_key = ${sessionSigningKey(key, sessionId).toString("base64url")},
        refresh_token_counter = ${current!.id}::bigint, refreshed_at = ${NOW} WHERE id = ${sessionId}`
      yield* deleteRowOf(tokens[0])
      // Two behind the counter but within the interval of the last refresh: GoTrue's rule for racing tabs hands out
      // the current token (the swept-token rule would have ended the session).
      const again = yield* sessions.refresh(tokens[0], later(1))
      expect(again.refreshToken).toBe(tokens[2])
      expect(yield* sessionLives(sessionId)).toBe(true)
    }))
})
