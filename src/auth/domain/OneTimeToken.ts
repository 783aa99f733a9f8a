import type { TokenKind } from "./LinkToken.js"
import { CODE_COLUMN_OF, type CodeColumn, SENT_AT_OF_CODE } from "./SentCodeState.js"
import type { UserRow } from "./UserRow.js"

/**
 * GoTrue's one_time_tokens rows, as pure rules. GoTrue keeps a row beside each pending token of a user (one per
 * users column, which names the row's token_type) and finds links there; Gatehouse writes the same rows so that a
 * database switched back to GoTrue can still verify what Gatehouse sent (migration 0014 says what that keeps).
 */

/** GoTrue's one_time_token_type: the name of the users column the token waits in. */
export type OneTimeTokenType = CodeColumn

export const ONE_TIME_TOKEN_TYPES = Object.keys(SENT_AT_OF_CODE) as ReadonlyArray<OneTimeTokenType>

const TOKEN_KINDS = Object.keys(CODE_COLUMN_OF) as ReadonlyArray<TokenKind>

/** A row's relates_to: the address the token was sent to, lower-cased, as GoTrue's CreateOneTimeToken writes it. */
export const relatesTo = (recipient: string): string => recipient.toLowerCase()

/** The tokens a user no longer holds: those whose users column is empty (spent, cleared, or never issued). */
export interface ClearedTokens {
  /** Their one_time_tokens rows must go. */
  readonly types: ReadonlyArray<OneTimeTokenType>
  /** Their pending_tokens rows must go (reauthentication has none). */
  readonly kinds: ReadonlyArray<TokenKind>
}

/**
 * What `user` (as just written) no longer holds. Whatever empties a column (a verification, too many wrong codes, a
 * password change, an admin's confirmation, an account taken over), its rows go too: GoTrue finds a link by its row
 * alone, so a row left behind would let a switched-back GoTrue take a token that is already gone here.
 */
export const clearedTokens = (user: UserRow): ClearedTokens => {
  const types = ONE_TIME_TOKEN_TYPES.filter((column) => (user[column] ?? "") === "")
  return { types, kinds: TOKEN_KINDS.filter((kind) => types.includes(CODE_COLUMN_OF[kind])) }
}
