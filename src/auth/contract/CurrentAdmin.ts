import * as Context from "effect/Context"

/** The caller of an admin route, established by AdminAuthenticated: its verified claims. */
export class CurrentAdmin extends Context.Tag("auth/CurrentAdmin")<CurrentAdmin, {
  readonly claims: Readonly<Record<string, unknown>>
}>() {}
