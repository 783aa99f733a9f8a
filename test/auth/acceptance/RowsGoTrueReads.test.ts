/**
 * Rows GoTrue can read back (issue 28's way back): GoTrue's models read some columns into plain Go strings, ints and
 * UUIDs, and a NULL in any of them fails every query that loads the row (GoTrue answers 500 "Database error querying
 * schema"). The columns are read from GoTrue v2.196's internal/models (User, RefreshToken). Users made every way
 * Gatehouse makes them, signed in and refreshed, must hold none.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, PASSWORD, raw, uniqueEmail, uniquePhone } from "./AcceptanceKit.js"

/** users columns GoTrue scans into non-nullable Go types. */
const USER_COLUMNS = [
  "instance_id", "aud", "role", "confirmation_token", "recovery_token", "email_change_token_current",
  "email_change_token_new", "email_change", "email_change_confirm_status", "phone_change_token", "phone_change",
  "reauthentication_token", "created_at", "updated_at", "is_anonymous", "is_sso_user"
]

const REFRESH_TOKEN_COLUMNS = ["instance_id", "id", "token", "user_id", "revoked", "created_at", "updated_at"]

acceptance({
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMS_AUTOCONFIRM: "true",
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true"
})("rows GoTrue can read", (it) => {
  it.effect("users made by sign-up (email, phone, anonymous), the admin API and an invite, and their refresh tokens, hold no NULL GoTrue cannot scan", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const admin = adminJwt()
      const made: Array<string> = []
      const keep = (response: { status: number; json: any; text: string }) => {
        expect(response.status, response.text).toBe(200)
        made.push(response.json.user?.id ?? response.json.id)
        return response
      }
      const email = keep(yield* raw(url, "/signup", { body: { email: uniqueEmail("readable"), password: PASSWORD } }))
      keep(yield* raw(url, "/signup", { body: { phone: uniquePhone(), password: PASSWORD } }))
      keep(yield* raw(url, "/signup", { body: {} }))
      keep(yield* raw(url, "/admin/users", { bearer: admin, body: { email: uniqueEmail("readable-admin"), password: PASSWORD } }))
      keep(yield* raw(url, "/invite", { bearer: admin, body: { email: uniqueEmail("readable-invite") } }))
      // A rotation writes a child token.
      expect((yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: email.json.refresh_token } })).status).toBe(200)

      const nullUsers = yield* sql<{ readonly id: string; readonly columns: ReadonlyArray<string> }>`
        SELECT id, ARRAY(SELECT c FROM unnest(${USER_COLUMNS}::text[]) c WHERE to_jsonb(u) -> c = 'null'::jsonb) AS columns
        FROM auth.users u WHERE id IN ${sql.in(made)}`
      expect(nullUsers).toHaveLength(made.length)
      expect(nullUsers.filter((row) => row.columns.length > 0)).toEqual([])

      const tokens = yield* sql<{ readonly columns: ReadonlyArray<string> }>`
        SELECT ARRAY(SELECT c FROM unnest(${REFRESH_TOKEN_COLUMNS}::text[]) c WHERE to_jsonb(r) -> c = 'null'::jsonb) AS columns
        FROM auth.refresh_tokens r WHERE user_id IN ${sql.in(made)}`
      expect(tokens.length).toBeGreaterThanOrEqual(4)
      expect(tokens.filter((row) => row.columns.length > 0)).toEqual([])
    }))
})
