import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted, Ref } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import type { AuthError } from "../../../src/auth/domain/AuthError.js"
import {
  deriveFirstFormRefreshToken,
  digestRefreshToken,
  refreshTokenKey,
  sessionSigningKey
} from "../../../src/auth/sessions/RefreshTokenCodec.js"
import { RefreshTokensRepo } from "../../../src/auth/sessions/RefreshTokensRepo.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { SessionsRepo } from "../../../src/auth/sessions/SessionsRepo.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { Users } from "../../../src/auth/users/Users.js"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { PlatformConfig } from "../../../src/config/PlatformConfig.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { TestServer } from "../../support/TestServer.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

/*
 * The refresh grant's two ways (issue 30, H1): a plain rotation goes as an unlocked read and one checked statement;
 * every other case goes the locked way, with the outcome it always had. The repository is spied on to see which way
 * each request went, and what each wrote is read back.
 */

class Spy extends Context.Tag("test/RefreshSpy")<Spy, {
  /** The repository calls of the exchange, in order: read, rotated / not rotated, locked. */
  readonly calls: Ref.Ref<ReadonlyArray<string>>
  /** Run between the read and the checked rotation once (a racing change). */
  readonly between: Ref.Ref<Effect.Effect<void> | undefined>
}>() {}

const SpyLive = Layer.effect(Spy, Effect.all({ calls: Ref.make<ReadonlyArray<string>>([]), between: Ref.make<Effect.Effect<void> | undefined>(undefined) }))

const Spied = Layer.effect(
  RefreshTokensRepo,
  Effect.gen(function*() {
    const live = yield* RefreshTokensRepo
    const spy = yield* Spy
    const note = (call: string) => Ref.update(spy.calls, (all) => [...all, call])
    return RefreshTokensRepo.make({
      ...live,
      readForExchange: (digest) => Effect.zipRight(note("read"), live.readForExchange(digest)),
      rotateChecked: (rotation) =>
        Effect.gen(function*() {
          const between = yield* Ref.getAndSet(spy.between, undefined)
          if (between !== undefined) yield* between
          const amr = yield* live.rotateChecked(rotation)
          yield* note(Option.isSome(amr) ? "rotated" : "not rotated")
          return amr
        }),
      lockSessionOf: (digest) => Effect.zipRight(note("locked"), live.lockSessionOf(digest))
    })
  })
).pipe(Layer.provide(RefreshTokensRepo.Default))

/**
 * Sessions over the spied repository, under a tag of its own: the test server's layers hold a Sessions of their own,
 * which would otherwise be the one a test gets.
 */
class SpiedSessions extends Context.Tag("test/SpiedSessions")<SpiedSessions, Sessions>() {}

const Setup = Layer.mergeAll(
  Layer.effect(SpiedSessions, Sessions).pipe(
    // Fresh: the test server built one already, over the unspied repository, and layers are shared by reference.
    Layer.provide(Layer.fresh(Sessions.DefaultWithoutDependencies)),
    Layer.provideMerge(Spied),
    Layer.provide(SessionsRepo.Default),
    Layer.provide(AuditLog.Default),
    Layer.provide(CurrentClient.Default),
    Layer.provide(Transactions.Live)
  ),
  Users.Default
).pipe(
  Layer.provideMerge(SpyLive),
  Layer.provideMerge(SecureRandom.Live),
  Layer.provideMerge(TestServer({ AUTH_MAILER_AUTOCONFIRM: "true" }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))))
)

const START = Date.UTC(2030, 0, 1)
const at = (seconds: number) => new Date(START + seconds * 1000)

const tables = Effect.map(PlatformConfig, (config) => authTables(config.db.namespace))

/** A new user with one fresh session, as a password sign-in leaves it. */
const signIn = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const users = yield* Users
  const sessions = yield* SpiedSessions
  return yield* sql.withTransaction(Effect.gen(function*() {
    const user = yield* users.create({
      aud: "authenticated",
      role: "authenticated",
      email: `detour-${randomUUID()}@example.com`,
      phone: null,
      encryptedPassword: null,
      userMetadata: {},
      provider: "email",
      emailConfirmedAt: at(0),
      phoneConfirmedAt: null,
      isAnonymous: false,
      madeBy: "signup",
      now: at(0)
    })
    return { ...(yield* sessions.start(user.id, "password", at(0))), userId: user.id }
  }))
})

/** The way the last refresh went, and then forgets it. */
const way = Effect.flatMap(Spy, (spy) => Ref.getAndSet(spy.calls, []))

const refresh = (token: string, now: Date, client?: string) =>
  Effect.flatMap(SpiedSessions, (sessions) => Effect.either(sessions.refresh(token, now, client)))

const codeOf = (error: AuthError) => error.code

const auditOf = (userId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    return yield* sql<{ id: string; payload: Record<string, unknown>; created_at: Date; ip_address: string }>`
      SELECT id::text AS id, payload, created_at, ip_address FROM ${sql(t.audit_log_entries)}
      WHERE payload->>'actor_id' = ${userId} ORDER BY id`
  })

const tokenRows = (sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    return yield* sql<{ id: string; token: string; parent: string | null; revoked: boolean; user_id: string }>`
      SELECT id::text AS id, token, parent, revoked, user_id FROM ${sql(t.refresh_tokens)} WHERE session_id = ${sessionId} ORDER BY id`
  })

const FAST = ["read", "rotated"]
const LOCKED = ["read", "locked"]

layer(Setup, { timeout: 120_000, excludeTestServices: true })("refresh grant: the checked rotation and its detours", (it) => {
  it.effect("a plain rotation takes two statements and writes what the locked exchange writes", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      yield* way
      const first = yield* refresh(started.refreshToken, at(10))
      expect(yield* way).toEqual(FAST)
      const issued = Option.getOrThrow(Option.getRight(first))
      expect(issued.sessionId).toBe(started.sessionId)
      expect(issued.amr).toEqual(started.amr)
      expect(issued.user.id).toBe(started.userId)
      const rows = yield* tokenRows(started.sessionId)
      expect(rows.map(({ parent, revoked, token }) => ({ token, parent, revoked }))).toEqual([
        { token: digestRefreshToken(started.refreshToken), parent: null, revoked: true },
        { token: digestRefreshToken(issued.refreshToken), parent: digestRefreshToken(started.refreshToken), revoked: false }
      ])
      expect(rows[1]!.user_id).toBe(started.userId)

      // The next rotation goes the locked way (an exported key, cleared on rotation): its audit entries are made the
      // same way as the checked rotation's.
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const key = refreshTokenKey(Redacted.value((yield* AuthConfig).jwt.secret))
      yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_hmac_key = ${sessionSigningKey(key, started.sessionId).toString("base64url")}
        WHERE id = ${started.sessionId}`
      const second = Option.getOrThrow(Option.getRight(yield* refresh(issued.refreshToken, at(20))))
      expect(yield* way).toEqual(LOCKED)
      expect(second.amr).toEqual(started.amr)
      const [key2] = yield* sql<{ k: string | null }>`SELECT refresh_token_hmac_key AS k FROM ${sql(t.sessions)} WHERE id = ${started.sessionId}`
      expect(key2!.k).toBeNull()

      const entries = yield* auditOf(started.userId)
      const refreshes = entries.filter((e) => e.payload["action"] === "token_revoked" || e.payload["action"] === "token_refreshed")
      expect(refreshes.map((e) => e.payload)).toEqual([
        ...[0, 1].flatMap(() => ["token_revoked", "token_refreshed"]).map((action) => ({
          actor_id: started.userId,
          actor_username: started.user.email,
          actor_via_sso: false,
          action,
          log_type: "token"
        }))
      ])
      // Ids are UUIDv7 in write order; each rotation's two entries share their created_at.
      for (const e of refreshes) expect(e.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(refreshes[0]!.created_at).toEqual(refreshes[1]!.created_at)
      expect(refreshes[2]!.created_at).toEqual(refreshes[3]!.created_at)
      expect(refreshes.map((e) => e.ip_address)).toEqual(["", "", "", ""])
    }))

  it.effect("a revoked token goes the locked way: the lost answer gets the child again, later reuse ends the session", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const child = Option.getOrThrow(Option.getRight(yield* refresh(started.refreshToken, at(10))))
      yield* way
      const again = yield* refresh(started.refreshToken, at(11))
      expect(yield* way).toEqual(LOCKED)
      expect(Option.getOrThrow(Option.getRight(again)).refreshToken).toBe(child.refreshToken)
      const reused = yield* refresh(started.refreshToken, at(3600))
      expect(yield* way).toEqual(LOCKED)
      expect(codeOf(Option.getOrThrow(Option.getLeft(reused)))).toBe("refresh_token_already_used")
      expect(yield* tokenRows(started.sessionId)).toEqual([])
    }))

  it.effect("past not_after: session_expired, the locked way", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      yield* sql`UPDATE ${sql(t.sessions)} SET not_after = ${at(5)} WHERE id = ${started.sessionId}`
      yield* way
      const refused = yield* refresh(started.refreshToken, at(10))
      expect(yield* way).toEqual(LOCKED)
      expect(codeOf(Option.getOrThrow(Option.getLeft(refused)))).toBe("session_expired")
    }))

  it.effect("a banned user: user_banned, the locked way", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      yield* sql`UPDATE ${sql(t.users)} SET banned_until = ${at(1000)} WHERE id = ${started.userId}`
      yield* way
      const refused = yield* refresh(started.refreshToken, at(10))
      expect(yield* way).toEqual(LOCKED)
      expect(codeOf(Option.getOrThrow(Option.getLeft(refused)))).toBe("user_banned")
    }))

  it.effect("a ban between the read and the rotation: the rotation writes nothing, the locked way refuses", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const spy = yield* Spy
      yield* Ref.set(spy.between, Effect.orDie(sql`UPDATE ${sql(t.users)} SET banned_until = ${at(1000)} WHERE id = ${started.userId}`))
      yield* way
      const refused = yield* refresh(started.refreshToken, at(10))
      expect(yield* way).toEqual(["read", "not rotated", "locked"])
      expect(codeOf(Option.getOrThrow(Option.getLeft(refused)))).toBe("user_banned")
      expect((yield* tokenRows(started.sessionId)).map((r) => r.revoked)).toEqual([false])
      expect((yield* auditOf(started.userId)).filter((e) => e.payload["action"] === "token_revoked")).toEqual([])
    }))

  it.effect("a racing rotation between the read and the rotation: the locked way hands out its child", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sessions = yield* SpiedSessions
      const spy = yield* Spy
      const raced = yield* Ref.make<string | undefined>(undefined)
      yield* Ref.set(
        spy.between,
        Effect.flatMap(Effect.orDie(sessions.refresh(started.refreshToken, at(10))), (s) => Ref.set(raced, s.refreshToken))
      )
      yield* way
      const second = Option.getOrThrow(Option.getRight(yield* refresh(started.refreshToken, at(11))))
      // The racer's own refresh (read, rotated) ran inside this one's (read, …, not rotated, locked).
      expect(yield* way).toEqual(["read", "read", "rotated", "not rotated", "locked"])
      expect(second.refreshToken).toBe(yield* Ref.get(raced))
      expect((yield* tokenRows(started.sessionId)).map((r) => r.revoked)).toEqual([true, false])
    }))

  it.effect("a session moved on by GoTrue (counter past the row): the locked way judges it as a signed token", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const [row] = yield* tokenRows(started.sessionId)
      yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_counter = ${Number(row!.id) + 5}, refreshed_at = ${at(5)}
        WHERE id = ${started.sessionId}`
      yield* way
      const refused = yield* refresh(started.refreshToken, at(10))
      expect(yield* way).toEqual(LOCKED)
      // No key on the session: GoTrue's rules find the token unknown. Its row is there, so it is no swept token either.
      expect(codeOf(Option.getOrThrow(Option.getLeft(refused)))).toBe("refresh_token_not_found")
    }))

  it.effect("an OAuth client presenting a session that is not its own: invalid_client, the locked way", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      yield* way
      const refused = yield* refresh(started.refreshToken, at(10), randomUUID())
      expect(yield* way).toEqual(LOCKED)
      const error = Option.getOrThrow(Option.getLeft(refused))
      expect([error.code, error.message]).toEqual(["invalid_client", "Client authentication not allowed for non-OAuth session"])
    }))

  it.effect("a GoTrue legacy token and a first-form token rotate the locked way, to a Gatehouse child", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const repo = yield* RefreshTokensRepo
      const key = refreshTokenKey(Redacted.value((yield* AuthConfig).jwt.secret))
      const legacy = "abcdefgh1234"
      yield* repo.insert({ id: yield* repo.nextId(), digest: legacy, userId: started.userId, parent: null, sessionId: started.sessionId, now: at(1) })
      yield* way
      const fromLegacy = Option.getOrThrow(Option.getRight(yield* refresh(legacy, at(10))))
      expect(yield* way).toEqual(LOCKED)
      expect(fromLegacy.refreshToken.length).toBeGreaterThan(43)
      const id = yield* repo.nextId()
      const firstForm = deriveFirstFormRefreshToken(key, started.sessionId, id)
      yield* repo.insert({ id, digest: digestRefreshToken(firstForm), userId: started.userId, parent: null, sessionId: started.sessionId, now: at(11) })
      const fromFirst = Option.getOrThrow(Option.getRight(yield* refresh(firstForm, at(20))))
      expect(yield* way).toEqual(LOCKED)
      expect(fromFirst.sessionId).toBe(started.sessionId)
      const rows = yield* tokenRows(started.sessionId)
      expect(rows.filter((r) => r.parent === legacy || r.parent === digestRefreshToken(firstForm)).length).toBe(2)
    }))

  it.effect("an unknown token and a token whose session is gone: the locked way's refusals", () =>
    Effect.gen(function*() {
      const started = yield* signIn
      const sessions = yield* SpiedSessions
      yield* way
      const unknown = yield* refresh("x".repeat(43), at(10))
      expect(yield* way).toEqual(["read", "locked"])
      expect(codeOf(Option.getOrThrow(Option.getLeft(unknown)))).toBe("refresh_token_not_found")
      yield* sessions.logout(started.userId, started.sessionId, "local")
      const gone = yield* refresh(started.refreshToken, at(11))
      expect(codeOf(Option.getOrThrow(Option.getLeft(gone)))).toBe("refresh_token_not_found")
    }))
})
