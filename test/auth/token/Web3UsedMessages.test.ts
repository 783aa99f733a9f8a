import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { ExpiredWeb3Messages } from "../../../src/auth/token/ExpiredWeb3Messages.js"
import { Web3UsedMessagesRepo } from "../../../src/auth/token/Web3UsedMessagesRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * The used-message record of Web3 sign-in (migration 0019) on the database (PGlite, or PostgreSQL with
 * DATABASE_URL): a digest is claimed once, concurrent claims have one winner, an expired record is taken over, and
 * the sweep deletes expired records, a backlog of several batches too, and nothing live.
 */

const Migrated = configLayer(testConfig()).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const digest = (n: number) => {
  const bytes = new Uint8Array(32)
  new DataView(bytes.buffer).setUint32(0, n)
  return bytes
}

const build = Effect.map(
  Layer.build(ExpiredWeb3Messages.DefaultWithoutDependencies.pipe(Layer.provideMerge(Web3UsedMessagesRepo.Default))),
  (context) => ({ expired: Context.get(context, ExpiredWeb3Messages), repo: Context.get(context, Web3UsedMessagesRepo) })
)

layer(Migrated, { timeout: 60_000 })("Web3UsedMessagesRepo on the database", (it) => {
  it.scoped("claims a digest once; of concurrent claims exactly one wins; an expired record is taken over", () =>
    Effect.gen(function*() {
      const { repo } = yield* build
      const live = new Date(Date.now() + 600_000)
      expect(yield* repo.claim(digest(1), live)).toBe(true)
      expect(yield* repo.claim(digest(1), live)).toBe(false)
      const racing = yield* Effect.all(Array.from({ length: 8 }, () => repo.claim(digest(2), live)), { concurrency: "unbounded" })
      expect(racing.filter(Boolean)).toHaveLength(1)
      expect(yield* repo.claim(digest(3), new Date(Date.now() - 1000))).toBe(true)
      expect(yield* repo.claim(digest(3), live)).toBe(true)
      expect(yield* repo.claim(digest(3), live)).toBe(false)
    }))

  it.scoped("a sweep deletes every expired record, over several batches, and keeps the live ones", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = authTables("")
      yield* sql`DELETE FROM ${sql(t.web3_used_messages)}`
      yield* TestClock.setTime(Duration.toMillis(Duration.hours(2)))
      const { expired, repo } = yield* build
      yield* Effect.forEach(Array.from({ length: 1_100 }, (_, i) => i), (i) => repo.claim(digest(100 + i), new Date(Duration.toMillis(Duration.hours(1)))), { concurrency: 8 })
      yield* repo.claim(digest(5_000), new Date(Duration.toMillis(Duration.hours(3))))
      expect(yield* expired.sweep()).toBe(1_100)
      const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(t.web3_used_messages)}`
      expect(rows[0]!.n).toBe(1)
    }))
})
