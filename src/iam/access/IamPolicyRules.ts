import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { IamConfig } from "../../config/IamConfig.js"
import type { PolicyRule } from "../../platform/Policy.js"
import type { IamError } from "../domain/IamError.js"
import { RolesRepo } from "../store/RolesRepo.js"

/** The Casbin subject of a user; roles are subjects by their name (which cannot contain ':'). */
export const userSubject = (userId: number): string => `user:${userId}`

/**
 * The policy lines the database implies: one `p, <role>, <RESOURCE>, <ACTION>` per granted permission, one
 * `g, user:<id>, <role>` per assignment, and the admin role allowed everything.
 */
export const policyRules = (
  adminRole: string,
  grants: ReadonlyArray<{ readonly role: string; readonly resource: string; readonly action: string }>,
  assignments: ReadonlyArray<{ readonly userId: number; readonly role: string }>
): ReadonlyArray<PolicyRule> => [
  ["p", adminRole, "*", "*"],
  ...grants.map((g) => ["p", g.role, g.resource, g.action]),
  ...assignments.map((a) => ["g", userSubject(a.userId), a.role])
]

/**
 * The rules the policy engine loads, and whether they are out of date. One instance serves both the engine
 * (which runs `load` on every reload) and IamPolicy (which polls `isStale`), so the version a load read is the
 * one the poll compares against.
 */
export class IamPolicyRules extends Effect.Service<IamPolicyRules>()("iam/IamPolicyRules", {
  effect: Effect.gen(function*() {
    const repo = yield* RolesRepo
    const iam = yield* IamConfig
    const seen = yield* Ref.make("")

    // Version first: a change committed while the rules are read is then seen as newer on the next poll.
    const load: Effect.Effect<ReadonlyArray<PolicyRule>> = Effect.gen(function*() {
      yield* Effect.flatMap(repo.policyVersion, (v) => Ref.set(seen, v))
      const grants = yield* repo.grants
      const assignments = yield* repo.assignments
      return policyRules(iam.adminRole, grants, assignments)
    }).pipe(Effect.orDie)

    /** Whether the database's policy version differs from the one the last load read. */
    const isStale: Effect.Effect<boolean, IamError> = Effect.map(
      Effect.zip(repo.policyVersion, Ref.get(seen)),
      ([current, known]) => current !== known
    )
    return { load, isStale }
  })
}) {}
