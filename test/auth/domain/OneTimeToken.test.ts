import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { clearedTokens, ONE_TIME_TOKEN_TYPES, relatesTo } from "../../../src/auth/domain/OneTimeToken.js"
import { CODE_COLUMN_OF } from "../../../src/auth/domain/SentCodeState.js"
import type { UserRow } from "../../../src/auth/domain/UserRow.js"

const NOTHING_PENDING = {
  id: "00000000-0000-4000-8000-000000000001",
  aud: "authenticated",
  role: "authenticated",
  email: "a@example.com",
  encrypted_password: null,
  email_confirmed_at: null,
  invited_at: null,
  confirmation_token: null,
  confirmation_sent_at: null,
  recovery_token: null,
  recovery_sent_at: null,
  email_change_token_new: null,
  email_change: null,
  email_change_token_current: null,
  email_change_confirm_status: 0,
  email_change_sent_at: null,
  last_sign_in_at: null,
  raw_app_meta_data: {},
  raw_user_meta_data: {},
  created_at: null,
  updated_at: null,
  phone: null,
  phone_confirmed_at: null,
  phone_change: null,
  phone_change_token: null,
  phone_change_sent_at: null,
  confirmed_at: null,
  banned_until: null,
  reauthentication_token: null,
  reauthentication_sent_at: null,
  is_sso_user: false,
  deleted_at: null,
  is_anonymous: false
} satisfies UserRow

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
