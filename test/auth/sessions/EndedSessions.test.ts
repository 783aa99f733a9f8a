/**
 * Migration 0027's trigger records every session that ends, whatever deletes it: statements as GoTrue, an operator or
 * a cascade from users send them (no Gatehouse code in the way), and nothing for a delete that rolls back. The feed's
 * pages then list exactly those sessions, in the order they ended. On PostgreSQL, a role that may delete sessions but
 * was never granted the feed's table (GoTrue's) still deletes them.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck, Layer } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { type FeedStart, nextPosition } from "../../../src/auth/domain/RevocationFeed.js"
import { EndedSessionsRepo } from "../../../src/auth/sessions/EndedSessionsRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { externalDatabaseUrl, TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

const t = authTables("")

const Migrated = EndedSessionsRepo.Default.pipe(
  Layer.provideMerge(configLayer(testConfig())),
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const newUser = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = randomUUID()
  yield* sql.unsafe(`INSERT INTO ${t.users} (instance_id, id, aud, role, email, created_at, updated_at, is_anonymous, is_sso_user)
    VALUES ('00000000-0000-0000-0000-000000000000', '${id}', 'authenticated', 'authenticated', '${id}@example.com', now(), now(), false, false)`)
  return id
})

const newSessions = (userId: string, n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = Array.from({ length: n }, () => randomUUID())
    if (n > 0) {
      yield* sql.unsafe(`INSERT INTO ${t.sessions} (id, user_id, created_at, updated_at, aal)
        VALUES ${ids.map((id) => `('${id}', '${userId}', now(), now(), 'aal1')`).join(", ")}`)
    }
    return ids
  })

/** Every row of the feed from the beginning, `limit` at a time, as the endpoint pages it. */
const wholeFeed = (limit: number) =>
  Effect.gen(function*() {
    const repo = yield* EndedSessionsRepo
    const rows: Array<{ sessionId: string; userId: string }> = []
    let start: FeedStart = { _tag: "Beginning" }
    for (let i = 0; i < 1000; i++) {
      const page = yield* repo.page(start, limit)
      rows.push(...page.rows.map((row) => ({ sessionId: row.sessionId, userId: row.userId })))
      const { more, next } = nextPosition(start, page.rows, limit, page.horizon)
      start = { _tag: "After", position: next }
      if (!more) break
    }
    return rows
  })

type Op =
  | { readonly _tag: "One" }
  | { readonly _tag: "Some"; readonly keep: number }
  | { readonly _tag: "User" }
  | { readonly _tag: "None" }
  | { readonly _tag: "RolledBack" }

const op: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  FastCheck.constant({ _tag: "One" } as const),
  FastCheck.record({ _tag: FastCheck.constant("Some" as const), keep: FastCheck.integer({ min: 0, max: 2 }) }),
  FastCheck.constant({ _tag: "User" } as const),
  FastCheck.constant({ _tag: "None" } as const),
  FastCheck.constant({ _tag: "RolledBack" } as const)
)

class Rollback extends Error {}

describe("the revocation feed's table (migration 0027)", () => {
  layer(Migrated, { timeout: 120_000 })((it) => {
    it.effect.prop("property: whatever deletes sessions, the feed lists exactly the ended ones, once each, in the order they ended", [
      FastCheck.array(op, { maxLength: 8 }),
      FastCheck.integer({ min: 1, max: 4 })
    ], ([ops, limit]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`DELETE FROM ${t.gatehouse_ended_sessions}`)
        const ended: Array<{ sessionId: string; userId: string }> = []
        for (const step of ops) {
          const user = yield* newUser
          const sessions = yield* newSessions(user, 3)
          switch (step._tag) {
            case "One":
              yield* sql.unsafe(`DELETE FROM ${t.sessions} WHERE id = '${sessions[1]}'`)
              ended.push({ sessionId: sessions[1]!, userId: user })
              break
            case "Some": {
              const gone = [...sessions].sort().slice(step.keep)
              yield* sql.unsafe(`DELETE FROM ${t.sessions} WHERE user_id = '${user}' AND id IN (${gone.map((id) => `'${id}'`).join(", ")})`)
              // One statement, one transaction: its rows come in session id order.
              ended.push(...gone.map((sessionId) => ({ sessionId, userId: user })))
              break
            }
            case "User":
              yield* sql.unsafe(`DELETE FROM ${t.users} WHERE id = '${user}'`)
              ended.push(...[...sessions].sort().map((sessionId) => ({ sessionId, userId: user })))
              break
            case "None":
              yield* sql.unsafe(`DELETE FROM ${t.sessions} WHERE id = '${randomUUID()}'`)
              break
            case "RolledBack":
              yield* sql.withTransaction(Effect.zipRight(
                sql.unsafe(`DELETE FROM ${t.sessions} WHERE user_id = '${user}'`),
                Effect.die(new Rollback())
              )).pipe(Effect.catchAllDefect((defect) => defect instanceof Rollback ? Effect.void : Effect.die(defect)))
              break
          }
        }
        expect(yield* wholeFeed(limit)).toEqual(ended)
      }), { fastCheck: { numRuns: 15 } })

    it.effect.skipIf(externalDatabaseUrl._tag === "None")("a role never granted the feed's table still deletes sessions, and they are recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const user = yield* newUser
        const [session] = yield* newSessions(user, 1)
        const role = `gatehouse_ender_${Math.random().toString(36).slice(2, 8)}`
        yield* sql.unsafe(`CREATE ROLE ${role}`)
        yield* sql.unsafe(`GRANT USAGE ON SCHEMA auth TO ${role}`)
        yield* sql.unsafe(`GRANT SELECT, DELETE ON ${t.sessions} TO ${role}`)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql.unsafe(`SET LOCAL ROLE ${role}`)
          yield* sql.unsafe(`DELETE FROM ${t.sessions} WHERE id = '${session}'`)
        }))
        const rows = yield* sql<{ user_id: string }>`SELECT user_id::text AS user_id FROM ${sql(t.gatehouse_ended_sessions)} WHERE session_id = ${session!}`
        expect(rows).toEqual([{ user_id: user }])
      }))
  })
})
