import * as Context from "effect/Context"
import type { FactorRow } from "../domain/FactorRow.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"

/** The signed-in caller, established by the Authenticated middleware. */
export class CurrentUser extends Context.Tag("auth/CurrentUser")<CurrentUser, {
  readonly user: UserRow
  /** The user's identities, oldest first (read with the user: GET /user answers with them). */
  readonly identities: ReadonlyArray<IdentityRow>
  /** The user's factors, oldest first (read with the user: GET /user lists them, the aal gates count them). */
  readonly factors: ReadonlyArray<FactorRow>
  /** The session named by the token's session_id claim, when it has one. */
  readonly sessionId: string | undefined
  /** That session's row: its level (what the aal gates read, not the token's claim) and the factor that raised it. */
  readonly session: { readonly aal: string | null; readonly factorId: string | null } | undefined
  /** The verified token's claims. */
  readonly claims: Readonly<Record<string, unknown>>
}>() {}
