import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { clearedTokens, ONE_TIME_TOKEN_TYPES, relatesTo } from "../../../src/auth/domain/OneTimeToken.js"
import { CODE_COLUMN_OF } from "../../../src/auth/domain/SentCodeState.js"
import { userWith } from "../../support/UserRows.js"

const NOTHING_PENDING = userWith({})

/** Each token column holds nothing (null or "") or a token. */
const columns = FastCheck.record(
  Object.fromEntries(ONE_TIME_TOKEN_TYPES.map((type) => [type, FastCheck.constantFrom(null, "", "pkce_0a1b", "0a1b2c")])) as Record<
    (typeof ONE_TIME_TOKEN_TYPES)[number],
    FastCheck.Arbitrary<string | null>
  >
)

describe("clearedTokens", () => {
  it("the types are GoTrue's one_time_token_type, the users columns' names", () => {
    expect(ONE_TIME_TOKEN_TYPES).toEqual([
      "confirmation_token",
      "recovery_token",
      "email_change_token_new",
      "email_change_token_current",
      "phone_change_token",
      "reauthentication_token"
    ])
  })

  it.prop("names exactly the columns that hold no token, and the pending kinds stored in them", [columns], ([held]) => {
    const { kinds, types } = clearedTokens({ ...NOTHING_PENDING, ...held })
    for (const type of ONE_TIME_TOKEN_TYPES) expect(types.includes(type)).toBe((held[type] ?? "") === "")
    for (const [kind, column] of Object.entries(CODE_COLUMN_OF)) expect(kinds.includes(kind as keyof typeof CODE_COLUMN_OF)).toBe(types.includes(column))
  })
})

describe("relatesTo", () => {
  it.prop("is the address lower-cased, as GoTrue writes it", [FastCheck.emailAddress()], ([address]) => {
    expect(relatesTo(address.toUpperCase())).toBe(address.toLowerCase())
  })
})
