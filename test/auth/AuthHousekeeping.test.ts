import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Either, FastCheck, Fiber, Layer, Option, Redacted, Runtime } from "effect"
import { authHousekeepingState, authHousekeepingTasks, AuthHousekeepingTasksLive } from "../../src/auth/AuthHousekeeping.js"
import { authTables } from "../../src/auth/AuthTables.js"
import { RATE_LIMIT_BATCH } from "../../src/auth/limits/ExpiredRateLimits.js"
import { FACTOR_LIMIT } from "../../src/auth/mfa/ExpiredFactors.js"
import { ID_WINDOW, REFRESH_TOKEN_MARGINS, refreshTokenTasks, REVOKED_LIMIT, REVOKED_PASS_EVERY } from "../../src/auth/sessions/ExpiredRefreshTokens.js"
import {
  deriveFirstFormRefreshToken,
  deriveRefreshToken,
  digestRefreshToken,
  refreshTokenKey,
  sessionSigningKey
} from "../../src/auth/sessions/RefreshTokenCodec.js"
import { RefreshTokenSweepRepo } from "../../src/auth/sessions/RefreshTokenSweepRepo.js"
import { Sessions } from "../../src/auth/sessions/Sessions.js"
import { Users } from "../../src/auth/users/Users.js"
import { configLayer } from "../../src/config/AppConfig.js"
import { PlatformConfig } from "../../src/config/PlatformConfig.js"
import { type HousekeepingTask, runHousekeeping, type SweepBatch } from "../../src/platform/process/Housekeeping.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { qualifiedTables } from "../../src/platform/sql/Tables.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"
import { externalDatabaseUrl, TestDatabase } from "../support/TestDatabase.js"
import { testConfig } from "../support/TestServer.js"

/*
 * Housekeeping (plan §3) on the database (PGlite, or PostgreSQL with DATABASE_URL): the lock, bounded batches, what
 * each task deletes and, above all, what it must keep.
 */

const NOW = new Date(Date.UTC(2030, 0, 1))
const at = (ms: number) => new Date(NOW.getTime() + ms)
const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const NO_PAUSE = { budget: Duration.hours(1), pause: Duration.zero }
const onPostgres = Option.isSome(externalDatabaseUrl)

const Setup = Users.Default.pipe(
  Layer.provideMerge(Sessions.Default),
  Layer.provideMerge(SecureRandom.Live),
  Layer.provideMerge(configLayer(testConfig())),
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const tables = Effect.map(PlatformConfig, (config) => authTables(config.db.namespace))
const key = refreshTokenKey(Redacted.value(testConfig().jwt.secret))

/** Every auth task, as the server builds them, with the given settings. */
const tasksWith = (env: Record<string, string> = {}) =>
  authHousekeepingTasks.pipe(
    Effect.provide(AuthHousekeepingTasksLive.pipe(Layer.provide(configLayer(testConfig(env)))))
  )

/** Every task once, due or not: the saved state of earlier runs (last_run) is forgotten first. */
const sweepAll = (now: Date, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM ${sql(qualifiedTables("auth", (yield* PlatformConfig).db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping)}`
    const state = yield* authHousekeepingState
    return yield* runHousekeeping(yield* tasksWith(env), state, now, NO_PAUSE)
  })

const newUser = Effect.gen(function*() {
  const users = yield* Users
  return yield* users.create({
    aud: "authenticated",
    role: "authenticated",
    email: `housekeeping-${randomUUID()}@example.com`,
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
})

/** A session refreshed `times` times: its tokens, oldest first (the last is current). */
const family = (times: number, when = NOW) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sessions = yield* Sessions
    const user = yield* newUser
    const started = yield* sql.withTransaction(sessions.start(user.id, "password", when))
    const tokens = [started.refreshToken]
    for (let i = 0; i < times; i++) tokens.push((yield* sessions.refresh(tokens[tokens.length - 1]!, when)).refreshToken)
    return { userId: user.id, sessionId: started.sessionId, tokens }
  })

const hasRow = (token: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    const digest = token.length === 12 ? token : digestRefreshToken(token)
    return (yield* sql`SELECT 1 FROM ${sql(t.refresh_tokens)} WHERE token = ${digest}`).length === 1
  })

const sessionLives = (sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    return (yield* sql`SELECT 1 FROM ${sql(t.sessions)} WHERE id = ${sessionId}`).length === 1
  })

const nextTokenId = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* tables
  const [row] = yield* sql<{ id: string }>`SELECT nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS id`
  return Number(row!.id)
})

const insertToken = (row: { id: number; token: string; userId: string; sessionId: string | null; revoked: boolean; at: Date; parent?: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* tables
    yield* sql`INSERT INTO ${sql(t.refresh_tokens)} (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
      VALUES ('00000000-0000-0000-0000-000000000000', ${row.id}, ${row.token}, ${row.userId}, ${row.revoked}, ${row.at}, ${row.at},
        ${row.parent ?? null}, ${row.sessionId})`
  })

describe("AUDIT_LOG_RETENTION", () => {
  it("is off unless set; 0 is off; under an hour is refused; GOTRUE_ spells it too", () => {
    expect(Option.isNone(testConfig().housekeeping.auditLogRetention)).toBe(true)
    expect(Option.isNone(testConfig({ AUTH_AUDIT_LOG_RETENTION: "0" }).housekeeping.auditLogRetention)).toBe(true)
    expect(() => testConfig({ AUTH_AUDIT_LOG_RETENTION: "59m" })).toThrow(/AUTH_AUDIT_LOG_RETENTION/)
    expect(() => testConfig({ GOTRUE_AUDIT_LOG_RETENTION: "10s" })).toThrow(/GOTRUE_AUDIT_LOG_RETENTION/)
    expect(testConfig({ GOTRUE_AUDIT_LOG_RETENTION: "720h" }).housekeeping.auditLogRetention).toEqual(Option.some(Duration.hours(720)))
    expect(testConfig().housekeeping.enabled).toBe(true)
    expect(testConfig({ AUTH_HOUSEKEEPING_ENABLED: "false" }).housekeeping.enabled).toBe(false)
  })
})

layer(Setup, { timeout: 120_000 })("housekeeping on the database", (it) => {
  it.effect("two runners on one database never sweep at once: the second finds the lock taken (or, embedded, waits)", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const inside = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const task = (who: string, hold: boolean): HousekeepingTask => ({
        name: "test/lock",
        every: Duration.zero,
        batch: () =>
          Effect.gen(function*() {
            events.push(`${who} start`)
            if (hold) {
              yield* Deferred.succeed(inside, undefined)
              yield* Deferred.await(release)
            }
            events.push(`${who} end`)
            return { deleted: 0, done: true, resumeAfter: null } satisfies SweepBatch
          })
      })
      const stateA = yield* authHousekeepingState
      const stateB = yield* authHousekeepingState
      const a = yield* Effect.fork(runHousekeeping([task("A", true)], stateA, NOW, NO_PAUSE))
      yield* Deferred.await(inside)
      const b = yield* Effect.fork(runHousekeeping([task("B", false)], stateB, at(1), NO_PAUSE))
      if (onPostgres) {
        // B ran to its end while A still holds the lock inside its batch.
        expect((yield* Fiber.join(b)).busy).toBe(true)
      }
      yield* Deferred.succeed(release, undefined)
      expect((yield* Fiber.join(a)).busy).toBe(false)
      const runB = yield* Fiber.join(b)
      expect(events.slice(0, 2)).toEqual(["A start", "A end"])
      expect(events.length).toBe(onPostgres ? 2 : 4)
      if (!onPostgres) expect(runB.busy).toBe(false)
    }))

  it.effect("a finished pass over the revoked tokens begins again only after REVOKED_PASS_EVERY (ten minutes); the rate-limit sweep at the next run", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM ${sql(qualifiedTables("auth", (yield* PlatformConfig).db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping)}`
      const state = yield* authHousekeepingState
      const tasks = yield* tasksWith()
      const ran = (run: { readonly deleted: Readonly<Record<string, number>> }) => Object.keys(run.deleted)
      const start = at(40 * DAY)
      expect(ran(yield* runHousekeeping(tasks, state, start, NO_PAUSE))).toContain("refresh_tokens/revoked")
      const soon = yield* runHousekeeping(tasks, state, new Date(start.getTime() + 9 * MINUTE), NO_PAUSE)
      expect(ran(soon)).not.toContain("refresh_tokens/revoked")
      expect(ran(soon)).toContain("rate_limits")
      expect(Duration.toMillis(REVOKED_PASS_EVERY)).toBe(10 * MINUTE)
      const due = yield* runHousekeeping(tasks, state, new Date(start.getTime() + 10 * MINUTE), NO_PAUSE)
      expect(ran(due)).toContain("refresh_tokens/revoked")
    }))

  it.effect("a batch walks one window of ids and saves where the pass goes on", () =>
    Effect.gen(function*() {
      const { sessionId, userId } = yield* family(0)
      const base = 1_000_000
      const ids = [base + 1, base + 2, base + Number(ID_WINDOW) + 1]
      for (const id of ids) {
        yield* insertToken({ id, token: digestRefreshToken(deriveRefreshToken(key, sessionId, String(id))), userId, sessionId, revoked: true, at: NOW })
      }
      const repo = yield* Effect.provide(RefreshTokenSweepRepo, RefreshTokenSweepRepo.Default)
      const [, revoked] = refreshTokenTasks(repo, key, { revokedKept: Duration.zero, orphansKept: Duration.zero })
      const first = yield* revoked!.batch(at(1), String(base))
      expect(first).toEqual({ deleted: 2, done: false, resumeAfter: String(base + Number(ID_WINDOW)) })
      const second = yield* revoked!.batch(at(1), first.resumeAfter)
      expect(second.deleted).toBe(1)
      expect(second.done).toBe(true)
      expect(second.resumeAfter).toBeNull()
    }))

  it.effect("a batch deletes at most REVOKED_LIMIT rows, and the next goes on after the last it looked at", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const { sessionId, userId } = yield* family(0)
      const first = yield* nextTokenId
      const ids = Array.from({ length: REVOKED_LIMIT + 5 }, (_, i) => first + 1 + i)
      yield* sql`SELECT setval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'), ${ids[ids.length - 1]!})`
      yield* sql`INSERT INTO ${sql(t.refresh_tokens)} ${sql.insert(ids.map((id) => ({
        instance_id: "00000000-0000-0000-0000-000000000000",
        id,
        token: digestRefreshToken(deriveRefreshToken(key, sessionId, String(id))),
        user_id: userId,
        revoked: true,
        created_at: NOW,
        updated_at: NOW,
        parent: null,
        session_id: sessionId
      })))}`
      const repo = yield* Effect.provide(RefreshTokenSweepRepo, RefreshTokenSweepRepo.Default)
      const [, revoked] = refreshTokenTasks(repo, key, { revokedKept: Duration.zero, orphansKept: Duration.zero })
      const batch = yield* revoked!.batch(at(1), String(first))
      expect(batch).toEqual({ deleted: REVOKED_LIMIT, done: false, resumeAfter: String(ids[REVOKED_LIMIT - 1]) })
      const rest = yield* revoked!.batch(at(1), batch.resumeAfter)
      expect(rest.deleted).toBe(5)
    }))

  it.effect("the refresh-token sweep keeps the current token, its parent, other forms and keyed sessions; a swept token is still reuse", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const sessions = yield* Sessions
      const main = yield* family(3)
      // A session with GoTrue's legacy row and a first-form row, both revoked and the parent of nothing.
      const other = yield* family(0)
      const legacy = "abcdefghij12"
      const firstId = yield* nextTokenId
      const first = deriveFirstFormRefreshToken(key, other.sessionId, String(firstId))
      yield* insertToken({ id: yield* nextTokenId, token: legacy, userId: other.userId, sessionId: other.sessionId, revoked: true, at: NOW })
      yield* insertToken({ id: firstId, token: digestRefreshToken(first), userId: other.userId, sessionId: other.sessionId, revoked: true, at: NOW })
      // A session holding the key export-sessions wrote.
      const keyed = yield* family(2)
      yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_hmac_key = ${sessionSigningKey(key, keyed.sessionId).toString("base64url")},
        refresh_token_counter = 1 WHERE id = ${keyed.sessionId}`

      // Within the ten minutes nothing revoked goes.
      yield* sweepAll(at(9 * MINUTE))
      expect(yield* hasRow(main.tokens[0]!)).toBe(true)

      const run = yield* sweepAll(at(11 * MINUTE))
      expect(run.busy).toBe(false)
      expect(run.deleted["refresh_tokens/revoked"]).toBeGreaterThanOrEqual(2)
      expect([yield* hasRow(main.tokens[0]!), yield* hasRow(main.tokens[1]!)]).toEqual([false, false])
      // The parent of the current token (ReturnChild may still need it) and the current one stay.
      expect([yield* hasRow(main.tokens[2]!), yield* hasRow(main.tokens[3]!)]).toEqual([true, true])
      expect([yield* hasRow(legacy), yield* hasRow(first), yield* hasRow(other.tokens[0]!)]).toEqual([true, true, true])
      expect((yield* sql`SELECT 1 FROM ${sql(t.refresh_tokens)} WHERE session_id = ${keyed.sessionId}`).length).toBe(3)
      expect([yield* sessionLives(main.sessionId), yield* sessionLives(other.sessionId), yield* sessionLives(keyed.sessionId)])
        .toEqual([true, true, true])

      // The current token still rotates, and its parent within the interval still gets the same child.
      const next = yield* sessions.refresh(main.tokens[3]!, at(12 * MINUTE))
      expect((yield* sessions.refresh(main.tokens[3]!, at(12 * MINUTE))).refreshToken).toBe(next.refreshToken)
      // A swept token is reuse: the session ends.
      const replay = yield* Effect.either(sessions.refresh(main.tokens[0]!, at(12 * MINUTE)))
      expect(Either.isLeft(replay) && replay.left.code).toBe("refresh_token_already_used")
      expect(yield* sessionLives(main.sessionId)).toBe(false)
    }))

  it.effect("rows of no session go after a day", () =>
    Effect.gen(function*() {
      const { userId } = yield* family(0)
      const orphan = digestRefreshToken(`orphan-${randomUUID()}`)
      yield* insertToken({ id: yield* nextTokenId, token: orphan, userId, sessionId: null, revoked: false, at: NOW })
      yield* sweepAll(at(DAY - MINUTE))
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      expect((yield* sql`SELECT 1 FROM ${sql(t.refresh_tokens)} WHERE token = ${orphan}`).length).toBe(1)
      yield* sweepAll(at(DAY + MINUTE))
      expect((yield* sql`SELECT 1 FROM ${sql(t.refresh_tokens)} WHERE token = ${orphan}`).length).toBe(0)
    }))

  it.effect("expired sessions go a day after not_after, with their tokens; live ones stay", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const expired = yield* family(1)
      const recent = yield* family(1)
      const live = yield* family(1)
      yield* sql`UPDATE ${sql(t.sessions)} SET not_after = ${at(-2 * DAY)} WHERE id = ${expired.sessionId}`
      yield* sql`UPDATE ${sql(t.sessions)} SET not_after = ${at(-DAY + MINUTE)} WHERE id = ${recent.sessionId}`
      yield* sweepAll(NOW)
      expect([yield* sessionLives(expired.sessionId), yield* sessionLives(recent.sessionId), yield* sessionLives(live.sessionId)])
        .toEqual([false, true, true])
      expect(yield* hasRow(expired.tokens[1]!)).toBe(false)
      expect(yield* hasRow(live.tokens[1]!)).toBe(true)
    }))

  it.effect("a session without key and without an unrevoked token goes once quiet for JWT_EXP + 24h", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const dead = yield* family(1)
      const live = yield* family(1)
      yield* sql`UPDATE ${sql(t.refresh_tokens)} SET revoked = true WHERE session_id = ${dead.sessionId}`
      yield* sweepAll(at(DAY))
      expect(yield* sessionLives(dead.sessionId)).toBe(true)
      yield* sweepAll(at(DAY + 2 * 3600_000))
      expect([yield* sessionLives(dead.sessionId), yield* sessionLives(live.sessionId)]).toEqual([false, true])
    }))

  it.effect("one-time rows go a day after the longest code lifetime", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const user = yield* newUser
      yield* sql`INSERT INTO ${sql(t.one_time_tokens)} (id, user_id, token_type, token_hash, relates_to, created_at, updated_at)
        VALUES (${randomUUID()}, ${user.id}, 'recovery_token', 'hash', 'a@example.com', ${NOW.toISOString()}, ${NOW.toISOString()})`
      yield* sql`INSERT INTO ${sql(t.pending_tokens)} (user_id, token_kind, code_hash, created_at) VALUES (${user.id}, 'recovery', 'hash', ${NOW})`
      yield* sql`INSERT INTO ${sql(t.otp_attempts)} (user_id, token_kind, token_hash, failures, updated_at) VALUES (${user.id}, 'recovery', 'hash', 1, ${NOW})`
      const count = Effect.gen(function*() {
        const [row] = yield* sql<{ n: number }>`SELECT
          (SELECT count(*) FROM ${sql(t.one_time_tokens)} WHERE user_id = ${user.id})
          + (SELECT count(*) FROM ${sql(t.pending_tokens)} WHERE user_id = ${user.id})
          + (SELECT count(*) FROM ${sql(t.otp_attempts)} WHERE user_id = ${user.id}) AS n`
        return Number(row!.n)
      })
      // The default lifetimes: a day for mail (MAILER_OTP_EXP 86400), a minute for texts.
      yield* sweepAll(at(2 * DAY - MINUTE))
      expect(yield* count).toBe(3)
      yield* sweepAll(at(2 * DAY + MINUTE))
      expect(yield* count).toBe(0)
    }))

  it.effect("audit entries stay by default; with a retention, those past it go", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const old = randomUUID()
      const recent = randomUUID()
      yield* sql`INSERT INTO ${sql(t.audit_log_entries)} (id, payload, created_at) VALUES (${old}, '{}', ${at(-30 * DAY)}), (${recent}, '{}', ${at(-DAY)})`
      const present = (id: string) => Effect.map(sql`SELECT 1 FROM ${sql(t.audit_log_entries)} WHERE id = ${id}`, (rows) => rows.length === 1)
      const run = yield* sweepAll(NOW)
      expect(run.deleted["audit_log_entries"]).toBeUndefined()
      expect([yield* present(old), yield* present(recent)]).toEqual([true, true])
      yield* sweepAll(NOW, { AUTH_AUDIT_LOG_RETENTION: "168h" })
      expect([yield* present(old), yield* present(recent)]).toEqual([false, true])
    }))

  it.effect("the count rows of many connections fold into one per part; the totals do not move, and retention deletes count down", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const totals = sql<{ tbl: string; part: string; n: string }>`
        SELECT tbl, part, sum(n)::text AS n FROM ${sql(t.gatehouse_row_counts)} GROUP BY tbl, part ORDER BY tbl, part`
      // What connections that have since gone left behind (no backend has these pids): a row each.
      // They net to nothing, so the counts stay equal to the rows (the daily recount, in the same run, agrees).
      for (const [shard, n] of [[101, 5], [202, -3], [303, -2]] as const) {
        yield* sql`INSERT INTO ${sql(t.gatehouse_row_counts)} (tbl, part, shard, n) VALUES ('users', 'authenticated', ${shard}, ${n})`
      }
      const before = yield* totals
      yield* sweepAll(NOW)
      expect(yield* totals).toEqual(before)
      const left = yield* sql<{ shards: string }>`
        SELECT count(*)::text AS shards FROM ${sql(t.gatehouse_row_counts)} WHERE shard IN (101, 202, 303)`
      expect(left[0]!.shards).toBe("0")
      // An entry past the retention goes through the delete trigger: X-Total-Count stays exact.
      const audited = () => Effect.map(totals, (rows) => Number(rows.find((r) => r.tbl === "audit_log_entries")?.n ?? 0))
      yield* sql`INSERT INTO ${sql(t.audit_log_entries)} (id, payload, created_at) VALUES (${randomUUID()}, '{}', ${at(-300 * DAY)})`
      const withOld = yield* audited()
      const [{ rows }] = yield* sql<{ rows: string }>`SELECT count(*)::text AS rows FROM ${sql(t.audit_log_entries)}`
      expect(withOld).toBe(Number(rows))
      yield* sweepAll(NOW, { AUTH_AUDIT_LOG_RETENTION: "4320h" })
      const [{ rows: after }] = yield* sql<{ rows: string }>`SELECT count(*)::text AS rows FROM ${sql(t.audit_log_entries)}`
      expect(yield* audited()).toBe(Number(after))
      expect(Number(after)).toBeLessThan(withOld)
    }))

  it.effect("a count the triggers missed is corrected by the recount, in one snapshot with the rows", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      yield* newUser
      const counts = Effect.map(
        sql<{ users: string; counted: string; audit: string; audited: string }>`SELECT
          (SELECT count(*) FROM ${sql(t.users)} WHERE aud = 'authenticated')::text AS users,
          (SELECT coalesce(sum(n), 0) FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'users' AND part = 'authenticated')::text AS counted,
          (SELECT count(*) FROM ${sql(t.audit_log_entries)})::text AS audit,
          (SELECT coalesce(sum(n), 0) FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'audit_log_entries')::text AS audited`,
        ([row]) => row!
      )
      // As if rows had been restored with the triggers off: the sums are off by 7 and -2, and a part without rows.
      yield* sql`INSERT INTO ${sql(t.gatehouse_row_counts)} (tbl, part, shard, n)
        VALUES ('users', 'authenticated', 0, 7), ('audit_log_entries', '', 0, -2), ('users', 'nobody', 0, 3)
        ON CONFLICT (tbl, part, shard) DO UPDATE SET n = ${sql(t.gatehouse_row_counts)}.n + EXCLUDED.n`
      const off = yield* counts
      expect(Number(off.counted) - Number(off.users)).toBe(7)
      expect(Number(off.audited) - Number(off.audit)).toBe(-2)
      yield* sweepAll(NOW)
      const mended = yield* counts
      expect(mended.counted).toBe(mended.users)
      expect(mended.audited).toBe(mended.audit)
      const [nobody] = yield* sql<{ n: string }>`SELECT coalesce(sum(n), 0)::text AS n FROM ${sql(t.gatehouse_row_counts)} WHERE part = 'nobody'`
      expect(nobody!.n).toBe("0")
    }))

  it.effect("every clean-up of the auth tables is a housekeeping task (so AUTH_HOUSEKEEPING_ENABLED=false turns each off)", () =>
    Effect.gen(function*() {
      const names = (yield* tasksWith()).map((task) => task.name)
      expect(names).toEqual(expect.arrayContaining([
        "one_time_rows",
        "rate_limits",
        "recipient_sends",
        "flow_state",
        "mfa_challenges",
        "webauthn_challenges",
        "oauth_authorizations",
        "web3_used_messages",
        "saml_records"
      ]))
      expect(new Set(names).size).toBe(names.length)
    }))

  it.effect("recipient_sends rows go once all their sends have aged out (and a minute for clock skew), live ones stay", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const tag = `housekeeping-${NOW.getTime()}`
      const row = (name: string, expiresAt: number) =>
        sql`INSERT INTO ${sql(t.recipient_sends)} (channel, recipient, sent, expires_at)
          VALUES ('email', ${`${tag}-${name}`}, ARRAY[${expiresAt - 10 * MINUTE}::bigint], ${expiresAt}::bigint)`
      yield* row("aged", NOW.getTime() - DAY)
      yield* row("skew", NOW.getTime() - 30_000)
      yield* row("live", NOW.getTime() + MINUTE)
      yield* sweepAll(NOW)
      const left = yield* sql<{ recipient: string }>`SELECT recipient FROM ${sql(t.recipient_sends)}
        WHERE recipient LIKE ${`${tag}-%`} ORDER BY recipient`
      expect(left.map((r) => r.recipient)).toEqual([`${tag}-live`, `${tag}-skew`])
    }))

  it.effect("a backlog of rate_limits buckets and of MFA challenges larger than one batch goes in several bounded batches", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* tables
      const buckets = 2 * RATE_LIMIT_BATCH + 7
      const challenges = 2 * FACTOR_LIMIT + 3
      // Buckets refilled long ago (tat is in milliseconds since the epoch), and one still counting.
      yield* sql`INSERT INTO ${sql(t.rate_limits)} (route, key, tat)
        SELECT 'housekeeping-test', 'k' || g, ${NOW.getTime() - DAY}::bigint FROM generate_series(1, ${buckets}) AS g`
      yield* sql`INSERT INTO ${sql(t.rate_limits)} (route, key, tat) VALUES ('housekeeping-test', 'live', ${NOW.getTime() + MINUTE}::bigint)`
      // Challenges of a verified factor, two days old, and one of an hour.
      const user = yield* newUser
      const factorId = randomUUID()
      yield* sql`INSERT INTO ${sql(t.mfa_factors)} (id, user_id, friendly_name, factor_type, status, created_at, updated_at)
        VALUES (${factorId}, ${user.id}, 'backlog', 'totp', 'verified', ${at(-2 * DAY)}, ${at(-2 * DAY)})`
      yield* sql`INSERT INTO ${sql(t.mfa_challenges)} (id, factor_id, created_at, ip_address)
        SELECT gen_random_uuid(), ${factorId}, ${at(-2 * DAY)}, '127.0.0.1' FROM generate_series(1, ${challenges})`
      yield* sql`INSERT INTO ${sql(t.mfa_challenges)} (id, factor_id, created_at, ip_address)
        VALUES (${randomUUID()}, ${factorId}, ${at(-60 * MINUTE)}, '127.0.0.1')`

      // The two tasks as the server builds them, each batch's deletions recorded.
      const batches: Record<string, Array<number>> = { rate_limits: [], mfa_challenges: [] }
      const tasks = (yield* tasksWith())
        .filter((task) => task.name in batches)
        .map((task): HousekeepingTask => ({
          ...task,
          batch: (now, resumeAfter) => Effect.tap(task.batch(now, resumeAfter), (batch) => Effect.sync(() => batches[task.name]!.push(batch.deleted)))
        }))
      expect(tasks.map((task) => task.name).sort()).toEqual(["mfa_challenges", "rate_limits"])
      yield* sql`DELETE FROM ${sql(qualifiedTables("auth", (yield* PlatformConfig).db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping)}`
      const run = yield* runHousekeeping(tasks, yield* authHousekeepingState, NOW, NO_PAUSE)
      expect(run).toMatchObject({ busy: false, outOfTime: false })

      // Rows other cases left may go too; what matters: no statement took more than its limit, and it took several.
      expect(batches["rate_limits"]!.length).toBeGreaterThanOrEqual(3)
      expect(Math.max(...batches["rate_limits"]!)).toBe(RATE_LIMIT_BATCH)
      expect(batches["mfa_challenges"]!.length).toBeGreaterThanOrEqual(3)
      // A batch deletes up to FACTOR_LIMIT challenges and up to FACTOR_LIMIT unverified factors.
      expect(Math.max(...batches["mfa_challenges"]!)).toBeLessThanOrEqual(2 * FACTOR_LIMIT)
      expect(run.deleted["rate_limits"]).toBeGreaterThanOrEqual(buckets)
      expect(run.deleted["mfa_challenges"]).toBeGreaterThanOrEqual(challenges)
      const [left] = yield* sql<{ buckets: string; challenges: string }>`SELECT
        (SELECT string_agg(key, ',') FROM ${sql(t.rate_limits)} WHERE route = 'housekeeping-test') AS buckets,
        (SELECT count(*)::text FROM ${sql(t.mfa_challenges)} WHERE factor_id = ${factorId}) AS challenges`
      expect(left).toEqual({ buckets: "live", challenges: "1" })
    }))

  it.effect("property: over random forests of rows, the sweep deletes exactly the revoked signed-form rows no exchange needs", () =>
    Effect.gen(function*() {
      const repo = yield* Effect.provide(RefreshTokenSweepRepo, RefreshTokenSweepRepo.Default)
      const [, revokedTask] = refreshTokenTasks(repo, key)
      const keptFor = Duration.toMillis(REFRESH_TOKEN_MARGINS.revokedKept)
      const rowArb = FastCheck.record({
        parent: FastCheck.option(FastCheck.nat(), { nil: null }),
        revoked: FastCheck.boolean(),
        agoMs: FastCheck.constantFrom(0, keptFor - 1, keptFor, keptFor + 1, 3 * keptFor),
        form: FastCheck.constantFrom("signed", "signed", "signed", "first", "legacy")
      })
      const forestArb = FastCheck.array(
        FastCheck.record({ keyed: FastCheck.boolean(), rows: FastCheck.array(rowArb, { minLength: 1, maxLength: 8 }) }),
        { minLength: 1, maxLength: 3 }
      )
      const property = (forest: ReadonlyArray<{ readonly keyed: boolean; readonly rows: ReadonlyArray<{ readonly parent: number | null; readonly revoked: boolean; readonly agoMs: number; readonly form: string }> }>) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const t = yield* tables
          const inserted: Array<{ id: number; digest: string; revoked: boolean; old: boolean; form: string; keyed: boolean; parentOfLive: boolean }> = []
          for (const tree of forest) {
            const { sessionId, userId } = yield* family(0)
            yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE session_id = ${sessionId}`
            if (tree.keyed) {
              yield* sql`UPDATE ${sql(t.sessions)} SET refresh_token_hmac_key = ${sessionSigningKey(key, sessionId).toString("base64url")},
                refresh_token_counter = 1 WHERE id = ${sessionId}`
            }
            const digests: Array<string> = []
            const rows: Array<{ id: number; digest: string; parent: number | null; revoked: boolean; old: boolean; form: string }> = []
            for (const [i, row] of tree.rows.entries()) {
              const id = yield* nextTokenId
              const digest = row.form === "legacy"
                ? `legacy${String(id).padStart(6, "0")}`.slice(-12).replace(/[^a-z0-9]/g, "a")
                : digestRefreshToken(row.form === "first" ? deriveFirstFormRefreshToken(key, sessionId, String(id)) : deriveRefreshToken(key, sessionId, String(id)))
              const parent = row.parent === null || i === 0 ? null : row.parent % i
              digests.push(digest)
              rows.push({ id, digest, parent, revoked: row.revoked, old: row.agoMs > keptFor, form: row.form })
              yield* insertToken({ id, token: digest, userId, sessionId, revoked: row.revoked, at: at(-row.agoMs), ...(parent === null ? {} : { parent: digests[parent]! }) })
            }
            for (const [i, row] of rows.entries()) {
              const parentOfLive = rows.some((child) => child.parent === i && !child.revoked)
              inserted.push({ ...row, keyed: tree.keyed, parentOfLive })
            }
          }
          let resumeAfter: string | null = null
          for (;;) {
            const batch: SweepBatch = yield* revokedTask!.batch(NOW, resumeAfter)
            if (batch.done) break
            resumeAfter = batch.resumeAfter
          }
          const left = new Set((yield* sql<{ id: string }>`SELECT id::text AS id FROM ${sql(t.refresh_tokens)} WHERE id IN ${sql.in(inserted.map((r) => r.id))}`)
            .map((r) => Number(r.id)))
          for (const row of inserted) {
            const sweepable = row.revoked && !row.parentOfLive && row.form === "signed" && !row.keyed && row.old
            expect(left.has(row.id), JSON.stringify(row)).toBe(!sweepable)
          }
        })
      const runtime = yield* Effect.runtime<SqlClient.SqlClient | PlatformConfig | Users | Sessions>()
      yield* Effect.promise(() =>
        FastCheck.assert(FastCheck.asyncProperty(forestArb, (forest) => Runtime.runPromise(runtime)(property(forest))), { numRuns: 50 })
      )
    }), 120_000)
})
