import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { capabilityKey, decideDelegation, type Delegation, EVERYTHING, type Holdings } from "../domain/Delegation.js"
import { IamError } from "../domain/IamError.js"
import { ACTIONS, RESOURCES } from "../domain/ResourceAction.js"
import { IamPolicy } from "./IamPolicy.js"
import { RolesRepo } from "../store/RolesRepo.js"
import { traced } from "../../platform/Traced.js"

/** Who asks for a change: an authenticated user by id, or the operator at the command line (bootstrap-admin). */
export const OPERATOR = "operator"
export type Actor = number | typeof OPERATOR

/**
 * What users hold, read from the policy engine itself (so it is exactly what the guards enforce), and the
 * delegation rule (domain/Delegation) applied to it: nobody hands out or takes away more than they hold.
 */
export class Authority extends Context.Tag("iam/Authority")<Authority, {
  readonly holdingsOf: (actor: Actor) => Effect.Effect<Holdings, IamError>
  /**
   * PERMISSION_DENIED unless `actor` may do `delegation`; the message names what they lack and what it stopped
   * (`deed`: "assign it", "mint a token for them"), in the ids they sent, so it tells them nothing new.
   */
  readonly require: (actor: Actor, delegation: Delegation, deed: string) => Effect.Effect<void, IamError>
  /** The same for minting a token for user `userId`, whose holdings this reads. */
  readonly requireTokenFor: (actor: Actor, userId: number) => Effect.Effect<void, IamError>
}>() {
  static readonly layer: Layer.Layer<Authority, never, IamPolicy | RolesRepo> = Layer.effect(
    Authority,
    Effect.gen(function*() {
      const policy = yield* IamPolicy
      const repo = yield* RolesRepo
      const everyCapability = RESOURCES.flatMap((resource) => ACTIONS.map((action) => ({ resource, action })))

      const holdingsOf = traced("Authority.holdingsOf")(function*(actor: Actor) {
        if (actor === OPERATOR) return EVERYTHING
        const admin = yield* policy.isAdmin(actor)
        const roles = yield* repo.rolesOf(actor)
        const allowed = yield* Effect.filter(everyCapability, (c) => policy.enforce(actor, c.resource, c.action))
        return { admin, roles: new Set(roles.map((r) => r.id)), capabilities: new Set(allowed.map(capabilityKey)) } satisfies Holdings
      })

      const require = traced("Authority.require")(function*(actor: Actor, delegation: Delegation, deed: string) {
        const decision = decideDelegation(yield* holdingsOf(actor), delegation)
        if (decision._tag === "Deny") {
          return yield* IamError.denied(`permission denied: you do not hold ${decision.lacking}, so you cannot ${deed}`)
        }
      })

      const requireTokenFor = traced("Authority.requireTokenFor")(function*(actor: Actor, userId: number) {
        if (actor === OPERATOR) return
        const holdings = yield* holdingsOf(userId)
        yield* require(actor, { _tag: "Token", userId, holdings }, "mint a token for them")
      })

      return { holdingsOf, require, requireTokenFor }
    })
  )
}
