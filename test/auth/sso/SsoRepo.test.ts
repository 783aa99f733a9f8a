import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { ExpiredSamlRecords } from "../../../src/auth/sso/ExpiredSamlRecords.js"
import { SsoRepo } from "../../../src/auth/sso/SsoRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * The SAML records on the database (PGlite, or PostgreSQL with DATABASE_URL): a used assertion is claimed once (one
 * winner of concurrent claims, an expired record taken over), a relay state is taken once, and the sweep deletes
 * expired used assertions and day-old relay states, a backlog over several batches too, and nothing live.
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
  Layer.build(ExpiredSamlRecords.DefaultWithoutDependencies.pipe(Layer.provideMerge(SsoRepo.Default))),
  (context) => ({ expired: Context.get(context, ExpiredSamlRecords), repo: Context.get(context, SsoRepo) })
)

const newProvider = (repo: SsoRepo, now: Date) =>
  Effect.gen(function*() {
    const id = randomUUID()
    yield* repo.insert({
      id, samlId: randomUUID(), resourceId: null, disabled: null, entityId: `https://idp-${id}.example`, metadataXml: "<x/>",
      metadataUrl: null, attributeMapping: {}, nameIdFormat: null, domains: [{ id: randomUUID(), domain: `${id}.example` }], now
    }).pipe(Effect.orDie)
    return id
  })

layer(Migrated, { timeout: 60_000 })("SsoRepo on the database", (it) => {
  it.scoped("claims an assertion once; of concurrent claims exactly one wins; an expired record is taken over", () =>
    Effect.gen(function*() {
      const { repo } = yield* build
      const live = new Date(Date.now() + 600_000)
      expect(yield* repo.claimAssertion(digest(1), live)).toBe(true)
      expect(yield* repo.claimAssertion(digest(1), live)).toBe(false)
      const racing = yield* Effect.all(Array.from({ length: 8 }, () => repo.claimAssertion(digest(2), live)), { concurrency: "unbounded" })
      expect(racing.filter(Boolean)).toHaveLength(1)
      expect(yield* repo.claimAssertion(digest(3), new Date(Date.now() - 1000))).toBe(true)
      expect(yield* repo.claimAssertion(digest(3), live)).toBe(true)
      expect(yield* repo.claimAssertion(digest(3), live)).toBe(false)
    }))

  it.scoped("takes a relay state once, also when two take it at the same time", () =>
    Effect.gen(function*() {
      const { repo } = yield* build
      const now = new Date()
      const provider = yield* newProvider(repo, now)
      const id = randomUUID()
      yield* repo.insertRelayState({ id, sso_provider_id: provider, request_id: "id-1", redirect_to: "", flow_state_id: null, created_at: now }).pipe(Effect.orDie)
      const taken = yield* Effect.all([repo.takeRelayState(id), repo.takeRelayState(id)], { concurrency: "unbounded" })
      expect(taken.filter((found) => found._tag === "Some")).toHaveLength(1)
    }))

  it.scoped("a sweep deletes expired used assertions and day-old relay states, over several batches, and keeps the live ones", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = authTables("")
      yield* sql`DELETE FROM ${sql(t.saml_used_assertions)}`
      yield* sql`DELETE FROM ${sql(t.saml_relay_states)}`
      const hour = Duration.toMillis(Duration.hours(1))
      yield* TestClock.setTime(48 * hour)
      const { expired, repo } = yield* build
      yield* Effect.forEach(Array.from({ length: 600 }, (_, i) => i), (i) => repo.claimAssertion(digest(100 + i), new Date(hour)), { concurrency: 8 })
      yield* repo.claimAssertion(digest(5_000), new Date(49 * hour))
      const provider = yield* newProvider(repo, new Date(0))
      yield* Effect.forEach(Array.from({ length: 510 }, (_, i) => i), (i) =>
        repo.insertRelayState({ id: randomUUID(), sso_provider_id: provider, request_id: `id-${i}`, redirect_to: "", flow_state_id: null, created_at: new Date(hour) }).pipe(Effect.orDie),
        { concurrency: 8 })
      yield* repo.insertRelayState({ id: randomUUID(), sso_provider_id: provider, request_id: "id-live", redirect_to: "", flow_state_id: null, created_at: new Date(47 * hour) }).pipe(Effect.orDie)
      expect(yield* expired.sweep()).toBe(1_110)
      const [left] = yield* sql<{ readonly used: number; readonly relays: number }>`SELECT
        (SELECT count(*)::int FROM ${sql(t.saml_used_assertions)}) AS used, (SELECT count(*)::int FROM ${sql(t.saml_relay_states)}) AS relays`
      expect(left).toStrictEqual({ used: 1, relays: 1 })
    }))
})
