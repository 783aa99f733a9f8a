import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { policyRules, userSubject } from "../../src/iam/access/IamPolicyRules.js"
import {
  type Capability, capabilityKey, decideDelegation, type Delegation, type Holdings, WILDCARD
} from "../../src/iam/domain/Delegation.js"
import { leavesNoAdmin } from "../../src/iam/domain/LastAdmin.js"
import { ACTIONS, RESOURCES } from "../../src/iam/domain/ResourceAction.js"
import { CasbinPolicy, Policy, readRbacModel } from "../../src/platform/Policy.js"

const concrete = fc.record({ resource: fc.constantFrom(...RESOURCES), action: fc.constantFrom(...ACTIONS) })
const withWildcards: fc.Arbitrary<Capability> = fc.record({
  resource: fc.constantFrom<string>(...RESOURCES, WILDCARD),
  action: fc.constantFrom<string>(...ACTIONS, WILDCARD)
})
const holdings: fc.Arbitrary<Holdings> = fc.record({
  admin: fc.boolean(),
  roles: fc.uniqueArray(fc.integer({ min: 1, max: 8 }), { maxLength: 5 }).map((ids) => new Set(ids)),
  capabilities: fc.uniqueArray(concrete.map(capabilityKey), { maxLength: 12 }).map((keys) => new Set(keys))
})
const nonAdmin = holdings.map((h) => ({ ...h, admin: false }))
const delegation: fc.Arbitrary<Delegation> = fc.oneof(
  fc.integer({ min: 1, max: 8 }).map((roleId): Delegation => ({ _tag: "Role", roleId })),
  fc.tuple(fc.integer({ min: 1, max: 99 }), fc.option(withWildcards, { nil: undefined }))
    .map(([permissionId, capability]): Delegation => ({ _tag: "Permission", permissionId, capability })),
  fc.tuple(fc.integer({ min: 1, max: 99 }), holdings).map(([userId, target]): Delegation => ({ _tag: "Token", userId, holdings: target }))
)
const allowed = (caller: Holdings, d: Delegation) => decideDelegation(caller, d)._tag === "Allow"
const isSubset = <A>(a: ReadonlySet<A>, b: ReadonlySet<A>) => [...a].every((x) => b.has(x))

describe("decideDelegation", () => {
  it.prop("an admin may hand out and take away anything", [holdings, delegation], ([caller, d]) => {
    expect(allowed({ ...caller, admin: true }, d)).toBe(true)
  })

  it.prop("a role moves only by a holder of it", [nonAdmin, fc.integer({ min: 1, max: 8 })], ([caller, roleId]) => {
    expect(allowed(caller, { _tag: "Role", roleId })).toBe(caller.roles.has(roleId))
  })

  it.prop("a permission moves only by someone the policy allows its resource and action; a wildcard by nobody but an admin",
    [nonAdmin, fc.option(withWildcards, { nil: undefined })], ([caller, capability]) => {
      const decision = decideDelegation(caller, { _tag: "Permission", permissionId: 7, capability })
      const wildcard = capability !== undefined && (capability.resource === WILDCARD || capability.action === WILDCARD)
      expect(decision._tag === "Allow").toBe(capability !== undefined && !wildcard && caller.capabilities.has(capabilityKey(capability)))
      if (decision._tag === "Deny") expect(decision.lacking).toBe(wildcard ? "the wildcard (*), which only an admin holds" : "permission 7")
    })

  it.prop("a token only for someone who holds no more: their permissions a subset of the caller's, and no admin",
    [nonAdmin, holdings], ([caller, target]) => {
      const decision = decideDelegation(caller, { _tag: "Token", userId: 5, holdings: target })
      expect(decision._tag === "Allow").toBe(!target.admin && isSubset(target.capabilities, caller.capabilities))
      // What the target holds is not spelled out: the caller may not be allowed to read it.
      if (decision._tag === "Deny") expect(decision.lacking).toBe("every permission user 5 holds")
    })

  it.prop("holding more never allows less", [nonAdmin, holdings, delegation], ([caller, extra, d]) => {
    const more: Holdings = {
      admin: extra.admin,
      roles: new Set([...caller.roles, ...extra.roles]),
      capabilities: new Set([...caller.capabilities, ...extra.capabilities])
    }
    if (allowed(caller, d)) expect(allowed(more, d)).toBe(true)
  })
})

describe("leavesNoAdmin", () => {
  const ids = fc.uniqueArray(fc.integer({ min: 1, max: 10 }), { maxLength: 6 })
  it.prop("exactly when every holder is removed, and there was one", [ids, ids], ([holders, removed]) => {
    expect(leavesNoAdmin(holders, removed)).toBe(holders.length > 0 && holders.every((h) => removed.includes(h)))
  })
  it.prop("removing one user leaves an admin whenever there were two", [ids, fc.integer({ min: 1, max: 10 })], ([holders, user]) => {
    if (holders.length >= 2) expect(leavesNoAdmin(holders, [user])).toBe(false)
  })
})

/*
 * The rule against the real engine: a non-admin caller makes random changes through the rule, each applied to the
 * rules the database would imply (policyRules) and enforced by Casbin over policy/rbac_model.conf. However the
 * changes go, nobody ends up holding anything that neither they nor the caller held before, nobody becomes an
 * admin, and the caller holds no more than at the start (less, if they gave up a role of theirs).
 */
const MODEL = await Effect.runPromise(readRbacModel)

describe("delegation over the Casbin policy", () => {
  const ADMIN_ROLE = 0
  const roleName = (id: number) => (id === ADMIN_ROLE ? "admin" : `role${id}`)
  const CALLER = 1
  const USERS = [1, 2, 3] as const
  const ROLE_IDS = [0, 1, 2, 3] as const
  const everyCapability = RESOURCES.flatMap((resource) => ACTIONS.map((action) => ({ resource, action })))

  interface State {
    readonly grants: ReadonlyArray<readonly [role: number, capability: Capability]>
    readonly assignments: ReadonlyArray<readonly [user: number, role: number]>
  }
  type Change =
    | { readonly _tag: "Assign" | "Unassign"; readonly user: number; readonly role: number }
    | { readonly _tag: "Grant" | "Revoke"; readonly role: number; readonly capability: Capability }

  const rulesOf = (state: State) =>
    policyRules(
      "admin",
      state.grants.map(([role, c]) => ({ role: roleName(role), resource: c.resource, action: c.action })),
      state.assignments.map(([userId, role]) => ({ userId, role: roleName(role) }))
    )

  const holdingsIn = (state: State, user: number) =>
    Effect.gen(function*() {
      const policy = yield* Policy
      const subject = userSubject(user)
      const capabilities = yield* Effect.filter(everyCapability, (c) => policy.enforce(subject, c.resource, c.action))
      return {
        admin: yield* policy.enforce(subject, WILDCARD, WILDCARD),
        roles: new Set(state.assignments.filter(([u]) => u === user).map(([, r]) => r)),
        capabilities: new Set(capabilities.map(capabilityKey))
      } satisfies Holdings
    }).pipe(Effect.provide(CasbinPolicy({ model: MODEL, rules: Effect.succeed(rulesOf(state)) })))

  const apply = (state: State, change: Change): State => {
    switch (change._tag) {
      case "Assign":
        return { ...state, assignments: [...state.assignments, [change.user, change.role]] }
      case "Unassign":
        return { ...state, assignments: state.assignments.filter(([u, r]) => u !== change.user || r !== change.role) }
      case "Grant":
        return { ...state, grants: [...state.grants, [change.role, change.capability]] }
      case "Revoke":
        return {
          ...state,
          grants: state.grants.filter(([r, c]) => r !== change.role || capabilityKey(c) !== capabilityKey(change.capability))
        }
    }
  }

  const asDelegation = (change: Change): Delegation =>
    "capability" in change
      ? { _tag: "Permission", permissionId: 1, capability: change.capability }
      : { _tag: "Role", roleId: change.role }

  const role = fc.constantFrom(...ROLE_IDS)
  const user = fc.constantFrom(...USERS)
  const change: fc.Arbitrary<Change> = fc.oneof(
    fc.record({ _tag: fc.constantFrom("Assign" as const, "Unassign" as const), user, role }),
    fc.record({ _tag: fc.constantFrom("Grant" as const, "Revoke" as const), role, capability: withWildcards })
  )
  // The caller is never an admin; the others may be.
  const state: fc.Arbitrary<State> = fc.record({
    grants: fc.array(fc.tuple(fc.constantFrom(1, 2, 3), concrete), { maxLength: 8 }),
    assignments: fc.array(fc.tuple(user, role), { maxLength: 6 }).map((links) =>
      links.filter(([u, r]) => !(u === CALLER && r === ADMIN_ROLE)))
  })

  it.effect.prop("nobody gains, through a non-admin's changes, what neither they nor the caller held",
    [state, fc.array(change, { maxLength: 10 })], ([initial, changes]) =>
      Effect.gen(function*() {
        const before = yield* Effect.forEach(USERS, (u) => holdingsIn(initial, u))
        const caller = before[0]!
        let current = initial
        for (const c of changes) {
          if (decideDelegation(yield* holdingsIn(current, CALLER), asDelegation(c))._tag === "Allow") current = apply(current, c)
        }
        const after = yield* Effect.forEach(USERS, (u) => holdingsIn(current, u))
        for (const [i, held] of after.entries()) {
          expect(held.admin && !before[i]!.admin, `user ${USERS[i]} became an admin`).toBe(false)
          const reachable = new Set([...before[i]!.capabilities, ...caller.capabilities])
          expect([...held.capabilities].filter((k) => !reachable.has(k)), `user ${USERS[i]}`).toEqual([])
        }
        expect(isSubset(after[0]!.capabilities, caller.capabilities)).toBe(true)
      }),
    { fastCheck: { numRuns: 60 } })
})
