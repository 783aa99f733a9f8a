import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import {
  decideRestart, NO_EXITS, RESTART_POLICY, type RestartDecision, type RestartHistory, type RestartPolicy
} from "../../src/platform/process/WorkerRestarts.js"

const policy: RestartPolicy = { firstDelayMillis: 500, maxDelayMillis: 30_000, stableAfterMillis: 60_000, maxStartFailures: 5 }
const served = (ms: number) => Option.some(ms)
const notServed = Option.none<number>()

const restart = (decision: RestartDecision) => {
  if (decision._tag !== "Restart") expect.fail("expected a restart, got GiveUp")
  return decision
}

/** The decisions for a sequence of exits, each fed the history the one before left. */
const replay = (exits: ReadonlyArray<Option.Option<number>>, rules = policy): ReadonlyArray<RestartDecision> => {
  let history: RestartHistory = NO_EXITS
  return exits.map((servedFor) => {
    const decision = decideRestart(history, servedFor, rules)
    if (decision._tag === "Restart") history = decision.history
    return decision
  })
}

describe("decideRestart", () => {
  it("replaces a worker that crashed after a healthy run after the first delay", () => {
    expect(restart(decideRestart(NO_EXITS, served(3_600_000), policy)).delayMillis).toBe(500)
    expect(restart(decideRestart({ exits: 9, startFailures: 0 }, served(60_000), policy)).delayMillis).toBe(500)
  })

  it("doubles the wait for exits close together, up to the cap", () => {
    const delays = replay(Array.from({ length: 9 }, () => served(1000))).map((d) => restart(d).delayMillis)
    expect(delays).toStrictEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
  })

  it("gives up after maxStartFailures replacements in a row exit before serving", () => {
    const decisions = replay(Array.from({ length: 5 }, () => notServed))
    expect(decisions.map((d) => d._tag)).toStrictEqual(["Restart", "Restart", "Restart", "Restart", "GiveUp"])
    expect(decisions.slice(0, 4).map((d) => restart(d).delayMillis)).toStrictEqual([500, 1000, 2000, 4000])
  })

  it("a worker that served at all resets the start-up count", () => {
    const decisions = replay([notServed, notServed, notServed, notServed, served(10), notServed, notServed, notServed, notServed])
    expect(decisions.every((d) => d._tag === "Restart")).toBe(true)
    expect(replay([notServed, notServed, notServed, notServed, served(10), ...Array.from({ length: 5 }, () => notServed)]).at(-1)?._tag)
      .toBe("GiveUp")
  })

  it("the default policy gives up within a minute of start-up failures", () => {
    const delays = replay(Array.from({ length: RESTART_POLICY.maxStartFailures }, () => notServed), RESTART_POLICY)
      .flatMap((d) => (d._tag === "Restart" ? [d.delayMillis] : []))
    expect(delays.reduce((a, b) => a + b, 0)).toBeLessThan(60_000)
  })
})

const policies = FastCheck.record({
  firstDelayMillis: FastCheck.integer({ min: 1, max: 10_000 }),
  maxDelayMillis: FastCheck.integer({ min: 10_000, max: 600_000 }),
  stableAfterMillis: FastCheck.integer({ min: 0, max: 600_000 }),
  maxStartFailures: FastCheck.integer({ min: 1, max: 20 })
})
const exits = FastCheck.array(FastCheck.option(FastCheck.integer({ min: 0, max: 10_000_000 }), { nil: undefined }), { maxLength: 60 })
  .map((list) => list.map((ms) => Option.fromNullable(ms)))

describe("decideRestart properties", () => {
  it.prop("every wait is between the first delay and the cap", [policies, exits], ([rules, list]) => {
    for (const decision of replay(list, rules)) {
      if (decision._tag === "Restart") {
        expect(decision.delayMillis).toBeGreaterThanOrEqual(rules.firstDelayMillis)
        expect(decision.delayMillis).toBeLessThanOrEqual(rules.maxDelayMillis)
      }
    }
  })

  it.prop("GiveUp exactly when the last maxStartFailures exits all came before serving",
    [policies, exits], ([rules, list]) => {
      let inARow = 0
      replay(list, rules).forEach((decision, i) => {
        inARow = Option.isNone(list[i]!) ? inARow + 1 : 0
        expect(decision._tag).toBe(inARow >= rules.maxStartFailures ? "GiveUp" : "Restart")
      })
    })

  it.prop("a worker that served never causes GiveUp, and a stable one restarts after the first delay",
    [policies, FastCheck.integer({ min: 0, max: 100 }), FastCheck.integer({ min: 0, max: 100 }), FastCheck.integer({ min: 0, max: 1e7 })],
    ([rules, exitsSoFar, startFailures, servedFor]) => {
      const decision = restart(decideRestart({ exits: exitsSoFar, startFailures }, served(servedFor), rules))
      expect(decision.history.startFailures).toBe(0)
      if (servedFor >= rules.stableAfterMillis) expect(decision.delayMillis).toBe(Math.min(rules.firstDelayMillis, rules.maxDelayMillis))
    })
})
