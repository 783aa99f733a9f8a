import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, FastCheck, Layer } from "effect"
import { type Admission, admitRequest, requestRate } from "../../../src/domain/RequestRate.js"
import { RateLimitsRepo } from "../../../src/auth/limits/RateLimitsRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/*
 * The SQL statement and the pure rule are one rule written twice. Here both are driven by the same random
 * requests (several clients and routes, moments that sometimes step back as another instance's clock would) and
 * must give the same answer to every request, Retry-After included: on PGlite, or PostgreSQL with DATABASE_URL.
 */

const LiveRepo = RateLimitsRepo.Default.pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(configLayer(testConfig())),
  Layer.provideMerge(TestDatabase)
)

const step = FastCheck.record({
  client: FastCheck.integer({ min: 0, max: 2 }),
  route: FastCheck.constantFrom("token", "otp"),
  // Mostly forward, sometimes nowhere, sometimes back.
  deltaMs: FastCheck.oneof(FastCheck.integer({ min: 0, max: 120 }), FastCheck.constant(0), FastCheck.integer({ min: -80, max: 0 }))
})
const rate = FastCheck.tuple(FastCheck.integer({ min: 1, max: 60 }), FastCheck.integer({ min: 1, max: 4 })).map(
  ([intervalMs, burst]) => requestRate(1, Duration.millis(intervalMs), burst)
)
const start = FastCheck.integer({ min: 1_000_000, max: 4_102_444_800_000 })

layer(LiveRepo, { timeout: 120_000 })("RateLimitsRepo's SQL", (it) => {
  it.effect.prop(
    "decides every request exactly as admitRequest does",
    [rate, start, FastCheck.array(step, { minLength: 1, maxLength: 60 })],
    ([limit, first, steps]) =>
      Effect.gen(function*() {
        const repo = yield* RateLimitsRepo
        const run = randomUUID()
        const model = new Map<string, number>()
        let now = first
        for (const { client, deltaMs, route } of steps) {
          now += deltaMs
          const key = `${run}-${client}`
          const id = `${route}/${key}`
          const expected: Admission = admitRequest(model.get(id), now, limit)
          if (expected.allowed) model.set(id, expected.tat)
          expect(yield* repo.admit(route, key, now, limit)).toStrictEqual(expected)
        }
      }),
    { fastCheck: { numRuns: 100 } }
  )
})
