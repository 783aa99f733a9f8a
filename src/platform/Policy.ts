import { type Enforcer, newEnforcer, newModelFromString } from "casbin"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { PACKAGE_ROOT } from "../Package.js"
import { traced } from "./Traced.js"

/**
 * One policy line, its type first, as in a Casbin CSV file: ["p", "role:admin", "roles", "create"] or
 * ["g", "user:1", "role:admin"].
 */
export type PolicyRule = ReadonlyArray<string>

/** The IAM service's authorization engine. */
export class Policy extends Context.Tag("platform/Policy")<
  Policy,
  {
    /** Whether `subject` may perform `action` on `object`. Anything no rule allows is denied. */
    readonly enforce: (subject: string, object: string, action: string) => Effect.Effect<boolean>
    /** Re-reads the rules; until the new rule set is fully built, enforce keeps answering from the old one. */
    readonly reload: Effect.Effect<void>
  }
>() {}

export interface CasbinPolicyOptions {
  /** The text of a Casbin model file, e.g. policy/rbac_model.conf. */
  readonly model: string
  /** The current policy lines; run again on every reload (the database is the source of truth). */
  readonly rules: Effect.Effect<ReadonlyArray<PolicyRule>>
}

// The rules go straight into the model rather than through enforcer.addPolicies: that call rejects a whole
// batch when one line is a duplicate, and two permissions granting the same line are legitimate.
const buildEnforcer = (model: string, rules: ReadonlyArray<PolicyRule>): Effect.Effect<Enforcer> =>
  Effect.promise(async () => {
    const casbinModel = newModelFromString(model)
    for (const [ptype = "", ...fields] of rules) {
      const section = ptype.charAt(0)
      // An unknown type would be dropped silently (and deny); it means the rules are derived wrongly, so say so.
      if (casbinModel.model.get(section)?.get(ptype) === undefined) {
        throw new Error(`policy rule of unknown type "${ptype}"`)
      }
      casbinModel.addPolicy(section, ptype, fields)
    }
    const enforcer = await newEnforcer(casbinModel)
    await enforcer.buildRoleLinks()
    return enforcer
  })

/**
 * Casbin over rules read from `options.rules`. Reload builds a complete new enforcer off to the side and then
 * swaps it in with one Ref.set, so a concurrent enforce sees the old rule set or the new one, never a
 * half-loaded mix, and a reload that fails leaves the old one in place. Reloads run one at a time, so the
 * last one started is the one that ends up in place.
 *
 * No CachedEnforcer: it keys its cache by joining the request with "$$", so distinct requests can collide.
 */
export const CasbinPolicy = (options: CasbinPolicyOptions): Layer.Layer<Policy> =>
  Layer.effect(
    Policy,
    Effect.gen(function*() {
      const load = Effect.flatMap(options.rules, (rules) => buildEnforcer(options.model, rules))
      const current = yield* Effect.flatMap(load, Ref.make)
      const reloads = yield* Effect.makeSemaphore(1)

      const enforce = traced("Policy.enforce")(function*(subject: string, object: string, action: string) {
        const enforcer = yield* Ref.get(current)
        return enforcer.enforceSync(subject, object, action)
      })
      const reload = reloads.withPermits(1)(Effect.flatMap(load, (enforcer) => Ref.set(current, enforcer))).pipe(
        Effect.withSpan("Policy.reload")
      )
      return Policy.of({ enforce, reload })
    })
  )

/** The repository's default model, policy/rbac_model.conf. */
export const readRbacModel: Effect.Effect<string> = Effect.promise(() => readFile(join(PACKAGE_ROOT, "policy", "rbac_model.conf"), "utf8"))

/**
 * The test layer is the real engine over fixed rules and the default model, not a lookup table: Casbin runs
 * in-process and needs nothing external, and a table would have to re-implement role inheritance and
 * wildcards, so a test could pass against semantics production does not have.
 */
export const PolicyTest = (rules: ReadonlyArray<PolicyRule>): Layer.Layer<Policy> =>
  Layer.unwrapEffect(Effect.map(readRbacModel, (model) => CasbinPolicy({ model, rules: Effect.succeed(rules) })))
