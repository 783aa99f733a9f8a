import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { authHousekeepingState, authHousekeepingTasks, AuthHousekeepingTasksLive } from "../../../src/auth/AuthHousekeeping.js"
import { authTables } from "../../../src/auth/AuthTables.js"
import { ExpiredFlows, FLOW_RETENTION, SWEEP_EVERY } from "../../../src/auth/sessions/ExpiredFlows.js"
import { FlowStateRepo } from "../../../src/auth/sessions/FlowStateRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { runHousekeeping } from "../../../src/platform/process/Housekeeping.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { qualifiedTables } from "../../../src/platform/sql/Tables.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * ExpiredFlows: GoTrue's cleanup of flow_state and oauth_client_states, a day after a row was made, as a housekeeping
 * task. On the database (PGlite, or PostgreSQL with DATABASE_URL): what a sweep deletes, including a backlog larger
 * than one batch, and that the housekeeping runner takes the task every SWEEP_EVERY.
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
      // The service reads the test's clock: the sweeps called here judge at the times set.
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
      expect(yield* expired.sweep()).toBe(0)
      expect(yield* remaining).toEqual({ flows: 1_201, client_states: 1_201 })
      yield* TestClock.setTime(Duration.toMillis(Duration.sum(FLOW_RETENTION, Duration.hours(1))) + 1)
      expect(yield* expired.sweep()).toBe(2_400)
      expect(yield* remaining).toEqual({ flows: 1, client_states: 1 })
      expect(yield* flows.claimOAuth(abandoned[0]!.id)).toEqual({ _tag: "Unknown" })
      expect(yield* flows.claimOAuth(recent.id)).toMatchObject({ _tag: "Claimed", flow: { provider_code_verifier: "v".repeat(43) } })
    }))

  it.scoped("the flow task is one of the auth housekeeping tasks, every SWEEP_EVERY: a run deletes the flows past their day", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tasks = yield* Effect.provide(authHousekeepingTasks, AuthHousekeepingTasksLive)
      const task = tasks.find((candidate) => candidate.name === "flow_state")
      expect(task === undefined ? undefined : Duration.toMillis(task.every)).toBe(Duration.toMillis(SWEEP_EVERY))
      const { flows } = yield* build(FlowStateRepo.Default)
      const now = new Date(Date.UTC(2030, 0, 1))
      const at = (ms: number) => new Date(now.getTime() + ms)
      const old = startAt(at(-Duration.toMillis(FLOW_RETENTION) - 60_000))
      const young = startAt(at(-Duration.toMillis(FLOW_RETENTION) + 60_000))
      yield* flows.startOAuth(old)
      yield* flows.startOAuth(young)
      yield* sql`DELETE FROM ${sql(qualifiedTables("auth", "", ["gatehouse_housekeeping"]).gatehouse_housekeeping)}`
      const state = yield* authHousekeepingState
      const run = yield* runHousekeeping([task!], state, now, { budget: Duration.hours(1), pause: Duration.zero })
      expect(run.busy).toBe(false)
      expect(run.deleted["flow_state"]).toBeGreaterThanOrEqual(2)
      expect(yield* flows.claimOAuth(old.id)).toEqual({ _tag: "Unknown" })
      // Not due again until SWEEP_EVERY has passed since that pass: a run a minute later leaves the young flow,
      // though it is past its day by then.
      const later = yield* runHousekeeping([task!], state, at(2 * 60_000), { budget: Duration.hours(1), pause: Duration.zero })
      expect(later.deleted["flow_state"]).toBeUndefined()
      const next = yield* runHousekeeping([task!], state, at(Duration.toMillis(SWEEP_EVERY)), { budget: Duration.hours(1), pause: Duration.zero })
      expect(next.deleted["flow_state"]).toBeGreaterThanOrEqual(2)
      expect(yield* flows.claimOAuth(young.id)).toEqual({ _tag: "Unknown" })
    }))
})
