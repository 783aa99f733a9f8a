import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Layer, Option, TestClock } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { ExpiredFlows, FLOW_RETENTION, SWEEP_EVERY } from "../../../src/auth/sessions/ExpiredFlows.js"
import { FlowStateRepo } from "../../../src/auth/sessions/FlowStateRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * ExpiredFlows: GoTrue's cleanup of flow_state and oauth_client_states, a day after a row was made. On the database
 * (PGlite, or PostgreSQL with DATABASE_URL) for what a sweep deletes, including a backlog larger than one batch; over
 * the in-memory repo for when the sweeps run.
 */

const Migrated = configLayer(testConfig()).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

/** ExpiredFlows and its repo, built in the test's scope so that the clock it reads is the test's. */
const build = <R>(repo: Layer.Layer<FlowStateRepo, never, R>) =>
  Effect.map(
    Layer.build(ExpiredFlows.DefaultWithoutDependencies.pipe(Layer.provideMerge(repo))),
    (context) => ({ expired: Context.get(context, ExpiredFlows), flows: Context.get(context, FlowStateRepo) })
  )

const hours = (n: number) => new Date(Duration.toMillis(Duration.hours(n)))

const startAt = (now: Date) => ({
  id: randomUUID(),
  providerType: "github",
  pkce: null,
  referrer: "http://localhost:3000/",
  providerCodeVerifier: "v".repeat(43),
  now
})

layer(Migrated, { timeout: 60_000 })("ExpiredFlows on the database", (it) => {
  it.scoped("a sweep deletes every flow and provider verifier older than a day, a backlog of several batches too, and nothing younger", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = authTables("")
      // The clock is set before the service starts, and moved less than SWEEP_EVERY after: only the sweeps called
      // here run.
      yield* TestClock.setTime(Duration.toMillis(Duration.sum(FLOW_RETENTION, Duration.minutes(59))))
      const { expired, flows } = yield* build(FlowStateRepo.Default)
      // 1,200 OAuth starts abandoned at 1 h, each with its verifier: more than two batches of each table.
      const abandoned = Array.from({ length: 1_200 }, () => startAt(hours(1)))
      yield* Effect.forEach(abandoned, (flow) => flows.startOAuth(flow), { concurrency: 8 })
      const recent = startAt(hours(20))
      yield* flows.startOAuth(recent)
      const remaining = Effect.map(
        sql<{ readonly flows: number; readonly client_states: number }>`SELECT
          (SELECT count(*) FROM ${sql(t.flow_state)})::int AS flows,
          (SELECT count(*) FROM ${sql(t.oauth_client_states)})::int AS client_states`,
        ([row]) => row
      )

      // At 24 h 59 min the oldest rows are a minute short of their day.
      expect(yield* expired.sweep()).toEqual({ flows: 0, clientStates: 0 })
      expect(yield* remaining).toEqual({ flows: 1_201, client_states: 1_201 })
      yield* TestClock.setTime(Duration.toMillis(Duration.sum(FLOW_RETENTION, Duration.hours(1))) + 1)
      expect(yield* expired.sweep()).toEqual({ flows: 1_200, clientStates: 1_200 })
      expect(yield* remaining).toEqual({ flows: 1, client_states: 1 })
      expect(yield* flows.claimOAuth(abandoned[0]!.id)).toEqual({ _tag: "Unknown" })
      expect(yield* flows.claimOAuth(recent.id)).toMatchObject({ _tag: "Claimed", flow: { provider_code_verifier: "v".repeat(43) } })
    }))
})

describe("ExpiredFlows schedule", () => {
  it.scoped("each instance sweeps every SWEEP_EVERY: a flow goes at the first sweep after its day", () =>
    Effect.gen(function*() {
      // Started with the service (the test clock may not be at 0: the case before can have moved it).
      const { flows } = yield* build(FlowStateRepo.Test)
      const requestToken = `req-${randomUUID()}`
      const flow = { ...startAt(new Date(yield* Clock.currentTimeMillis)), providerRequestToken: requestToken }
      yield* flows.startOAuth(flow)
      // The sweeps up to a day (the last at exactly a day) find nothing older than a day.
      yield* TestClock.adjust(FLOW_RETENTION)
      expect(yield* flows.findOAuthByRequestToken(requestToken)).toEqual(Option.some(flow.id))
      yield* TestClock.adjust(SWEEP_EVERY)
      expect(yield* flows.findOAuthByRequestToken(requestToken)).toEqual(Option.none())
    }))
})
