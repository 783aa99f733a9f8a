import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { CasbinPolicy, Policy, readRbacModel } from "../../platform/Policy.js"
import { notifyOrPoll } from "../../platform/sql/NotifyOrPoll.js"
import { WILDCARD } from "../domain/Delegation.js"
import type { IamError } from "../domain/IamError.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { IamSql } from "../IamSql.js"
import { IamPolicyRules, userSubject } from "./IamPolicyRules.js"
import { RolesRepo } from "../store/RolesRepo.js"

/**
 * Authorization over the roles and permissions in the database, answered by the platform's Policy engine.
 * Every change bumps policy_version and notifies in the changing transaction; this instance reloads right
 * after commit, others on the notification or, failing that, on their next poll of the version.
 */
export class IamPolicy extends Context.Tag("iam/IamPolicy")<IamPolicy, {
  readonly enforce: (userId: number, resource: Resource, action: Action) => Effect.Effect<boolean>
  /** Whether the policy allows the user the wildcard on the wildcard, as it does the admin role. */
  readonly isAdmin: (userId: number) => Effect.Effect<boolean>
  /** Run inside the transaction that changed roles, permissions or their links. */
  readonly changed: Effect.Effect<void, IamError>
  /** Run after that transaction committed. */
  readonly reload: Effect.Effect<void>
}>() {
  /**
   * The engine this IAM policy runs on: the platform's Casbin over policy/rbac_model.conf and the rules the
   * database implies. Provided from outside so a test can swap it for another Policy.
   */
  static readonly engine: Layer.Layer<Policy, never, IamPolicyRules> = Layer.unwrapEffect(
    Effect.gen(function*() {
      const rules = yield* IamPolicyRules
      const model = yield* readRbacModel
      return CasbinPolicy({ model, rules: rules.load })
    })
  )

  static readonly layer: Layer.Layer<IamPolicy, never, Policy | IamPolicyRules | RolesRepo | IamSql | IamConfig> =
    Layer.scoped(
      IamPolicy,
      Effect.gen(function*() {
        const engine = yield* Policy
        const rules = yield* IamPolicyRules
        const repo = yield* RolesRepo
        const { channel, listenSupported } = yield* IamSql
        const iam = yield* IamConfig

        const reloadIfNewer = Effect.flatMap(rules.isStale, (stale) => stale ? engine.reload : Effect.void)
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
        // Asked literally: only a line whose resource and action are both the wildcard matches a request for them.
        const isAdmin = (userId: number) => engine.enforce(userSubject(userId), WILDCARD, WILDCARD)
        return { enforce, isAdmin, changed: repo.bumpPolicyVersion, reload: engine.reload }
      })
    )
}
