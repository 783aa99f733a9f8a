import { Context, Effect, Layer, Ref } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { CasbinPolicy, Policy, type PolicyRule, readRbacModel } from "../../platform/Policy.js"
import { notifyOrPoll } from "../../platform/sql/NotifyOrPoll.js"
import type { IamError } from "../domain/IamError.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { IamSql } from "../IamSql.js"
import { RolesRepo } from "./RolesRepo.js"

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
 * The policy engine over the roles and permissions in the database (policy/rbac_model.conf is the model).
 * Every change bumps policy_version and notifies in the changing transaction; this instance reloads right
 * after commit, others on the notification or, failing that, on their next poll of the version.
 */
export class IamPolicy extends Context.Tag("iam/IamPolicy")<IamPolicy, {
  readonly enforce: (userId: number, resource: Resource, action: Action) => Effect.Effect<boolean>
  /** Run inside the transaction that changed roles, permissions or their links. */
  readonly changed: Effect.Effect<void, IamError>
  /** Run after that transaction committed. */
  readonly reload: Effect.Effect<void>
}>() {
  static readonly layer: Layer.Layer<IamPolicy, never, RolesRepo | IamSql | AppConfig> = Layer.scoped(
    IamPolicy,
    Effect.gen(function*() {
      const repo = yield* RolesRepo
      const { channel, listenSupported } = yield* IamSql
      const { iam } = yield* AppConfig
      const model = yield* readRbacModel

      const seen = yield* Ref.make("")
      // Version first: a change committed while the rules are read is then seen as newer on the next poll.
      const rules = Effect.gen(function*() {
        yield* Effect.flatMap(repo.policyVersion, (v) => Ref.set(seen, v))
        const grants = yield* repo.grants
        const assignments = yield* repo.assignments
        return policyRules(iam.adminRole, grants, assignments)
      }).pipe(Effect.orDie)

      const engine = yield* Layer.build(CasbinPolicy({ model, rules })).pipe(Effect.map(Context.get(Policy)))

      const reloadIfNewer = Effect.gen(function*() {
        const [current, known] = [yield* repo.policyVersion, yield* Ref.get(seen)]
        if (current !== known) yield* engine.reload
      })
      yield* notifyOrPoll({
        channel: channel.policy,
        interval: iam.cacheRefreshInterval,
        listenSupported,
        poll: reloadIfNewer,
        onNotify: () => engine.reload,
        messages: { pollFailed: "iam: could not check the policy version", listenFailed: "iam: LISTEN unavailable, relying on polling" }
      })

      const enforce = (userId: number, resource: Resource, action: Action) =>
        engine.enforce(userSubject(userId), resource, action)
      return { enforce, changed: repo.bumpPolicyVersion, reload: engine.reload }
    })
  )
}
