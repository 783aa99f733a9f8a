import { Context } from "effect"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"

/** The signed-in caller, established by the Authenticated middleware. */
export class CurrentUser extends Context.Tag("auth/CurrentUser")<CurrentUser, {
  readonly user: UserRow
  /** The user's identities, oldest first (read with the user: GET /user answers with them). */
  readonly identities: ReadonlyArray<IdentityRow>
  /** The session named by the token's session_id claim, when it has one. */
  readonly sessionId: string | undefined
  /** The verified token's claims. */
  readonly claims: Readonly<Record<string, unknown>>
}>() {}
