import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { FactorsRepo } from "../../../src/auth/factors/FactorsRepo.js"
import { ExpiredFactors, FACTOR_RETENTION } from "../../../src/auth/mfa/ExpiredFactors.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * ExpiredFactors on the database (PGlite, or PostgreSQL with DATABASE_URL): what one pass of its housekeeping task
 * deletes and keeps (a backlog of several batches: test/auth/AuthHousekeeping.test.ts).
 */

const Migrated = configLayer(testConfig()).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const hours = (n: number) => new Date(Duration.toMillis(Duration.hours(n)))

layer(Migrated, { timeout: 60_000 })("ExpiredFactors on the database", (it) => {
  it.scoped("a sweep deletes challenges and never-verified factors older than a day, and keeps verified and younger ones", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = authTables("")
      // The service reads the test's clock: the sweep called here judges at this time.
      yield* TestClock.setTime(Duration.toMillis(Duration.sum(FACTOR_RETENTION, Duration.hours(2))))
      const context = yield* Layer.build(ExpiredFactors.DefaultWithoutDependencies.pipe(Layer.provideMerge(FactorsRepo.Default)))
      const expired = Context.get(context, ExpiredFactors)
      const repo = Context.get(context, FactorsRepo)
      const userId = randomUUID()
      yield* sql`INSERT INTO ${sql(t.users)} (id, email, created_at, updated_at) VALUES (${userId}, ${`${userId}@example.com`}, ${hours(0)}, ${hours(0)})`
      const factor = (name: string, at: Date) =>
        repo.insert({ id: randomUUID(), userId, type: "totp", friendlyName: name, secret: "A".repeat(32), phone: null, now: at })
      const abandoned = yield* factor("abandoned", hours(1))
      const verified = yield* factor("verified", hours(1))
      yield* repo.markVerified(verified, {}, hours(1))
      const young = yield* factor("young", hours(20))
      const oldChallenge = randomUUID()
      const youngChallenge = randomUUID()
      yield* repo.insertChallenge({ id: oldChallenge, factorId: verified.id, ip: "127.0.0.1", now: hours(1), otpCode: "", webAuthnSessionData: null })
      yield* repo.insertChallenge({ id: youngChallenge, factorId: young.id, ip: "127.0.0.1", now: hours(20), otpCode: "", webAuthnSessionData: null })

      // The old challenge: the abandoned factor went already, when "young" was enrolled (each enrolment drops the
      // abandoned ones); the database is this file's own.
      expect(yield* expired.sweep()).toBe(1)
      const factors = yield* sql<{ id: string }>`SELECT id FROM ${sql(t.mfa_factors)} WHERE user_id = ${userId}`
      expect(factors.map((row) => row.id).sort()).toEqual([verified.id, young.id].sort())
      expect(factors.map((row) => row.id)).not.toContain(abandoned.id)
      const challenges = yield* sql<{ id: string }>`SELECT id FROM ${sql(t.mfa_challenges)} WHERE factor_id IN (${verified.id}, ${young.id})`
      expect(challenges.map((row) => row.id)).toEqual([youngChallenge])
    }))
})
