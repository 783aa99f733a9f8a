import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, type Context, Deferred, Effect, Exit, FastCheck, Fiber, Ref } from "effect"
import { readFileSync } from "node:fs"
import { CasbinPolicy, Policy, type PolicyRule, PolicyTest } from "../../src/platform/Policy.js"

const model = readFileSync(new URL("../../policy/rbac_model.conf", import.meta.url), "utf8")

const seed: ReadonlyArray<PolicyRule> = [
  ["p", "role:admin", "*", "*"],
  ["p", "role:viewer", "roles", "read"],
  ["p", "role:viewer", "roles", "list"],
  ["p", "role:editor", "roles/*", "update"],
  ["g", "role:editor", "role:viewer"],
  ["g", "user:1", "role:admin"],
  ["g", "user:2", "role:editor"],
  ["g", "user:3", "role:viewer"]
]

const withRules = (rules: ReadonlyArray<PolicyRule>) =>
  Effect.provide(CasbinPolicy({ model, rules: Effect.succeed(rules) }))

const enforce = (subject: string, object: string, action: string) =>
  Effect.flatMap(Policy, (policy) => policy.enforce(subject, object, action))

type Request = readonly [subject: string, object: string, action: string]

const decide = (policy: Context.Tag.Service<Policy>, requests: ReadonlyArray<Request>) =>
  Effect.forEach(requests, ([subject, object, action]) => policy.enforce(subject, object, action))

const decisions = (requests: ReadonlyArray<Request>) => Effect.flatMap(Policy, (policy) => decide(policy, requests))

describe("CasbinPolicy with the default RBAC model", () => {
  it.effect("grants what a role grants to its members, and what an inherited role grants", () =>
    Effect.gen(function*() {
      expect(
        yield* decisions([
          ["user:3", "roles", "read"],
          ["user:2", "roles", "read"],
          ["user:2", "roles", "list"],
          ["user:2", "roles/7", "update"],
          ["role:editor", "roles", "read"]
        ])
      ).toEqual([true, true, true, true, true])
    }).pipe(withRules(seed)))

  it.effect("denies whatever no rule allows", () =>
    Effect.gen(function*() {
      expect(
        yield* decisions([
          ["user:3", "roles/7", "update"],
          ["user:3", "roles", "delete"],
          ["user:2", "roles", "update"],
          ["user:2", "permissions", "read"],
          ["user:9", "roles", "read"],
          ["role:viewer", "roles/7", "update"]
        ])
      ).toEqual([false, false, false, false, false, false])
    }).pipe(withRules(seed)))

  it.effect("denies everything when there are no rules", () =>
    Effect.gen(function*() {
      expect(yield* decisions([["user:1", "roles", "read"], ["user:1", "*", "*"]])).toEqual([false, false])
    }).pipe(withRules([])))

  it.effect("lets a \"*\" object and action grant everything, but only to that role's members", () =>
    Effect.gen(function*() {
      expect(
        yield* decisions([
          ["user:1", "roles", "create"],
          ["user:1", "permissions", "delete"],
          ["user:1", "users/42", "anything-at-all"],
          ["user:2", "users/42", "delete"]
        ])
      ).toEqual([true, true, true, false])
    }).pipe(withRules(seed)))

  it.effect("does not treat a \"*\" in the request as a wildcard", () =>
    Effect.gen(function*() {
      expect(yield* decisions([["user:3", "*", "read"], ["user:3", "roles", "*"]])).toEqual([false, false])
    }).pipe(withRules(seed)))

  it.effect("accepts the same line twice (two permissions may derive it)", () =>
    Effect.gen(function*() {
      expect(yield* enforce("user:3", "roles", "read")).toBe(true)
    }).pipe(withRules([...seed, ["p", "role:viewer", "roles", "read"], ["g", "user:3", "role:viewer"]])))

  it.effect("refuses to start on a rule of an unknown type instead of dropping it", () =>
    Effect.gen(function*() {
      const broken = CasbinPolicy({ model, rules: Effect.succeed([["x", "a", "b"]]) })
      const exit = yield* Effect.exit(Effect.provide(Policy, broken))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    }))
})

describe("CasbinPolicy.reload", () => {
  const reloadable = Effect.gen(function*() {
    const rules = yield* Ref.make<ReadonlyArray<PolicyRule>>(seed)
    // Lets a test hold a reload in the middle of reading the rules.
    const gate = yield* Ref.make<Effect.Effect<void>>(Effect.void)
    const readRules = Effect.zipRight(Effect.flatten(Ref.get(gate)), Ref.get(rules))
    const policy = yield* Effect.provide(Policy, CasbinPolicy({ model, rules: readRules }))
    return { rules, gate, policy }
  })

  it.effect("picks up rules added since the last load", () =>
    Effect.gen(function*() {
      const { policy, rules } = yield* reloadable
      expect(yield* policy.enforce("user:4", "roles", "read")).toBe(false)

      yield* Ref.update(rules, (current) => [...current, ["g", "user:4", "role:viewer"]])
      expect(yield* policy.enforce("user:4", "roles", "read")).toBe(false)
      yield* policy.reload
      expect(yield* policy.enforce("user:4", "roles", "read")).toBe(true)
    }))

  it.effect("drops rules removed since the last load", () =>
    Effect.gen(function*() {
      const { policy, rules } = yield* reloadable
      yield* Ref.update(rules, (current) => current.filter(([, subject]) => subject !== "user:1"))
      yield* policy.reload
      expect(yield* policy.enforce("user:1", "roles", "create")).toBe(false)
    }))

  it.effect("keeps answering from the old rules until the new ones are fully loaded", () =>
    Effect.gen(function*() {
      const { gate, policy, rules } = yield* reloadable
      const reading = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      yield* Ref.set(gate, Effect.zipRight(Deferred.succeed(reading, undefined), Deferred.await(release)))
      yield* Ref.set(rules, [["p", "role:viewer", "roles", "read"], ["g", "user:4", "role:viewer"]])

      const reload = yield* Effect.fork(policy.reload)
      yield* Deferred.await(reading)
      expect(yield* decide(policy, [["user:1", "roles", "create"], ["user:4", "roles", "read"]])).toEqual([true, false])

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(reload)
      expect(yield* decide(policy, [["user:1", "roles", "create"], ["user:4", "roles", "read"]])).toEqual([false, true])
    }))

  it.effect("keeps the old rules when a reload fails", () =>
    Effect.gen(function*() {
      const { policy, rules } = yield* reloadable
      yield* Ref.set(rules, [["p", "role:viewer", "roles", "read"], ["q", "broken"]])
      const exit = yield* Effect.exit(policy.reload)

      expect(Exit.isFailure(exit)).toBe(true)
      expect(yield* decide(policy, [["user:1", "roles", "create"], ["user:3", "roles", "read"]])).toEqual([true, true])
    }))
})

describe("CasbinPolicy properties", () => {
  const roles = ["role:admin", "role:editor", "role:viewer", "role:auditor"] as const
  const users = ["user:1", "user:2", "user:3"] as const
  const objects = ["roles", "permissions", "users", "roles/1", "roles/*", "*"] as const
  const actions = ["create", "read", "update", "delete", "list", "*"] as const

  const grant = FastCheck.tuple(
    FastCheck.constantFrom(...roles),
    FastCheck.constantFrom(...objects),
    FastCheck.constantFrom(...actions)
  ).map(([role, object, action]): PolicyRule => ["p", role, object, action])
  // Members are users or roles, so role hierarchies (cycles included) come up too.
  const membership = FastCheck.tuple(FastCheck.constantFrom(...users, ...roles), FastCheck.constantFrom(...roles))
    .map(([member, role]): PolicyRule => ["g", member, role])
  const ruleSet = FastCheck.array(FastCheck.oneof(grant, membership), { maxLength: 25 })
  const requestedObject = FastCheck.oneof(FastCheck.constantFrom(...objects, "roles/2", "users/7"), FastCheck.string())
  const requestedAction = FastCheck.oneof(FastCheck.constantFrom(...actions, "export"), FastCheck.string())

  it.effect.prop(
    "a subject with no grouping rule is never allowed when rules grant only roles",
    [ruleSet, FastCheck.string(), requestedObject, requestedAction],
    ([rules, name, object, action]) =>
      Effect.gen(function*() {
        expect(yield* enforce(`outsider:${name}`, object, action)).toBe(false)
      }).pipe(withRules(rules)),
    { fastCheck: { numRuns: 100 } }
  )

  // The model's meaning, written out plainly: the subject's roles (transitively), then exact, "*" or
  // prefix/* objects and exact or "*" actions.
  const reference = (rules: ReadonlyArray<PolicyRule>, subject: string, object: string, action: string): boolean => {
    const reachable = new Set([subject])
    for (let grew = true; grew;) {
      grew = false
      for (const [type, member = "", role = ""] of rules) {
        if (type === "g" && reachable.has(member) && !reachable.has(role)) {
          reachable.add(role)
          grew = true
        }
      }
    }
    const objectMatches = (pattern: string) =>
      pattern.includes("*") ? object.startsWith(pattern.slice(0, pattern.indexOf("*"))) : pattern === object
    return rules.some(([type, sub = "", obj = "", act = ""]) =>
      type === "p" && reachable.has(sub) && objectMatches(obj) && (act === "*" || act === action)
    )
  }

  it.effect.prop(
    "decides exactly as plain role inheritance with wildcards would",
    [ruleSet, FastCheck.constantFrom(...users, ...roles, "user:9"), requestedObject, requestedAction],
    ([rules, subject, object, action]) =>
      Effect.gen(function*() {
        expect(yield* enforce(subject, object, action)).toBe(reference(rules, subject, object, action))
      }).pipe(withRules(rules)),
    { fastCheck: { numRuns: 200 } }
  )
})

layer(PolicyTest(seed))("PolicyTest", (it) => {
  it.effect("is the default model over fixed rules", () =>
    Effect.gen(function*() {
      expect(yield* decisions([["user:2", "roles", "read"], ["user:3", "roles/7", "update"]])).toEqual([true, false])
    }))
})
