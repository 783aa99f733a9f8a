import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck } from "effect"
import { CODE_COLUMN_OF, type CodeColumn, SENT_AT_OF_CODE, sentCodeState } from "../../../src/auth/domain/SentCodeState.js"
import type { UserRow } from "../../../src/auth/domain/UserRow.js"
import { userWith } from "../../support/UserRows.js"

const T0 = Date.UTC(2030, 0, 1)


const column = FastCheck.constantFrom(...(Object.keys(SENT_AT_OF_CODE) as Array<CodeColumn>))
const hash = FastCheck.stringMatching(/^(pkce_)?[0-9a-f]{56}$/)
const seconds = FastCheck.integer({ min: 0, max: 200_000 })

/** The user as the message left it: the column holding the code's hash, its sent-at column the message's time. */
const waiting = (at: CodeColumn, codeHash: string, sentAt: Date): UserRow => userWith({ [at]: codeHash, [SENT_AT_OF_CODE[at]]: sentAt })

describe("sentCodeState", () => {
  it.prop(
    "a code still in its column is not used, and is expired exactly when its lifetime has passed",
    { at: column, codeHash: hash, lifetime: seconds, elapsed: seconds },
    ({ at, codeHash, elapsed, lifetime }) => {
      const sentAt = new Date(T0)
      const state = sentCodeState({ column: at, codeHash, sentAt, lifetime: Duration.seconds(lifetime) }, waiting(at, codeHash, sentAt), new Date(T0 + elapsed * 1000))
      expect(state).toEqual({ used: false, expired: elapsed > lifetime })
    }
  )

  it.prop(
    "a code whose column holds something else, or nothing, or whose user is gone, is used",
    { at: column, codeHash: hash, other: FastCheck.constantFrom<string | null>(null, "", "a-newer-hash", "pkce_a-newer-hash") },
    ({ at, codeHash, other }) => {
      const sentAt = new Date(T0)
      const code = { column: at, codeHash, sentAt, lifetime: Duration.hours(1) }
      const now = new Date(T0 + 1000)
      expect(sentCodeState(code, waiting(at, other ?? "", sentAt), now).used).toBe(other !== codeHash)
      expect(sentCodeState(code, userWith({ [at]: other, [SENT_AT_OF_CODE[at]]: sentAt }), now)).toEqual({ used: true, expired: false })
      expect(sentCodeState(code, undefined, now)).toEqual({ used: true, expired: false })
    }
  )

  it.prop(
    "while the code waits its lifetime counts from the column's time, as /verify counts it; once spent, from the message's",
    { at: column, codeHash: hash, shift: FastCheck.integer({ min: 1, max: 3600 }) },
    ({ at, codeHash, shift }) => {
      const message = new Date(T0)
      const column = new Date(T0 - shift * 1000)
      const code = { column: at, codeHash, sentAt: message, lifetime: Duration.seconds(60) }
      const now = new Date(T0 + 30_000)
      // The column says the code went out `shift` seconds before the message's own time (a back-dated row).
      expect(sentCodeState(code, waiting(at, codeHash, column), now).expired).toBe(shift > 30)
      expect(sentCodeState(code, waiting(at, "spent", column), now).expired).toBe(false)
    }
  )

  it("a column this server does not keep codes in counts as used", () => {
    const sentAt = new Date(T0)
    const user = userWith({ confirmation_token: "h", confirmation_sent_at: sentAt })
    expect(sentCodeState({ column: "email", codeHash: "h", sentAt, lifetime: Duration.hours(1) }, user, sentAt)).toEqual({ used: true, expired: false })
  })

  it("every kind of pending token has its column, and every column its sent-at column", () => {
    expect(CODE_COLUMN_OF).toEqual({
      confirmation: "confirmation_token",
      recovery: "recovery_token",
      email_change_new: "email_change_token_new",
      email_change_current: "email_change_token_current",
      phone_change: "phone_change_token"
    })
    for (const at of Object.values(CODE_COLUMN_OF)) expect(SENT_AT_OF_CODE[at]).toMatch(/_sent_at$/)
  })
})
