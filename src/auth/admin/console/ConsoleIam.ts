import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** A permission as the console's IAM page lists it. */
export interface IamPermissionListing {
  readonly name: string
  readonly description: string | null
  readonly resource: string
  readonly action: string
}

/** A role and the permissions it grants. */
export interface IamRoleListing {
  readonly name: string
  readonly description: string | null
  readonly permissions: ReadonlyArray<IamPermissionListing>
}

export interface IamDirectory {
  readonly roles: ReadonlyArray<IamRoleListing>
  readonly permissions: ReadonlyArray<IamPermissionListing>
}

/**
 * The IAM service's roles and permissions, read-only, for the console's IAM page. A port because the auth product
 * never imports the IAM service: the composition that serves both (cli/AuthAndIamLive.ts) provides it from IAM's
 * Roles; a server without IAM provides `none`, and the page says IAM is not served here.
 */
export class ConsoleIam extends Context.Tag("auth/ConsoleIam")<ConsoleIam, {
  /** None: the IAM service is not served by this process. */
  readonly directory: Option.Option<Effect.Effect<IamDirectory>>
}>() {
  static readonly none: Layer.Layer<ConsoleIam> = Layer.succeed(ConsoleIam, { directory: Option.none() })
}
