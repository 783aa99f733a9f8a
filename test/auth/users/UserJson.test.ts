import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Schema } from "effect"
import { Session, sessionIdOf, withSessionId } from "../../../src/auth/contract/Session.js"
import { User } from "../../../src/auth/contract/User.js"
import type { IdentityRow, UserRow } from "../../../src/auth/domain/UserRow.js"
import { encodedResponse } from "../../../src/auth/http/EncodedResponse.js"
import { sessionHeaders } from "../../../src/auth/http/SessionHeaders.js"
import { userJson } from "../../../src/auth/users/UserJson.js"

// Rows as the pg driver hands them over: any nullable column null or set, metadata any JSON object.
const date = FastCheck.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2200-01-01T00:00:00Z"), noInvalidDate: true })
const maybe = <A>(arb: FastCheck.Arbitrary<A>) => FastCheck.option(arb, { nil: null })
const text = FastCheck.string({ maxLength: 30 })
// A "__proto__" key is left out here: the contract's encode copies records by assignment and so drops it, where the
// direct answer sends it back as stored (the last test shows that).
const json = FastCheck.dictionary(FastCheck.string({ maxLength: 10 }).filter((key) => key !== "__proto__"), FastCheck.jsonValue({ maxDepth: 3 }))

const userRow: FastCheck.Arbitrary<UserRow> = FastCheck.record({
  id: FastCheck.uuid(),
  aud: maybe(text),
  role: maybe(text),
  email: maybe(text),
  encrypted_password: maybe(text),
  email_confirmed_at: maybe(date),
  invited_at: maybe(date),
  confirmation_token: maybe(text),
  confirmation_sent_at: maybe(date),
  recovery_token: maybe(text),
  recovery_sent_at: maybe(date),
  email_change_token_new: maybe(text),
  email_change: maybe(text),
  email_change_token_current: maybe(text),
  email_change_confirm_status: maybe(FastCheck.integer({ min: 0, max: 2 })),
  email_change_sent_at: maybe(date),
  last_sign_in_at: maybe(date),
  raw_app_meta_data: maybe(json),
  raw_user_meta_data: maybe(json),
  created_at: maybe(date),
  updated_at: maybe(date),
  phone: maybe(text),
  phone_confirmed_at: maybe(date),
  phone_change: maybe(text),
  phone_change_token: maybe(text),
  phone_change_sent_at: maybe(date),
  confirmed_at: maybe(date),
  banned_until: maybe(date),
  reauthentication_token: maybe(text),
  reauthentication_sent_at: maybe(date),
  is_sso_user: FastCheck.boolean(),
  deleted_at: maybe(date),
  is_anonymous: FastCheck.boolean()
})

const identityRow: FastCheck.Arbitrary<IdentityRow> = FastCheck.record({
  id: FastCheck.uuid(),
  provider_id: text,
  user_id: FastCheck.uuid(),
  identity_data: json,
  provider: text,
  last_sign_in_at: maybe(date),
  created_at: maybe(date),
  updated_at: maybe(date),
  email: maybe(text)
})

/** What a client parses from a value sent as JSON (-0 arrives as 0, say). */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

const bodyOf = (value: User | Session): unknown => {
  const response = encodedResponse(value)
  expect(response.headers["content-type"]).toBe("application/json")
  return response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined
}

/*
 * GET /user and the token endpoints answer with the value as built, skipping the contract's encode (and userJson
 * skips the constructor's validation). That is sound only if what userJson builds is exactly what the contract
 * would have sent: valid for the schema, and equal to its encoding.
 */
describe("userJson", () => {
  it.prop("builds a valid User whose JSON is the contract's encoding, for any row", [userRow, FastCheck.array(identityRow, { maxLength: 3 })],
    ([row, identities]) => {
      const user = userJson(row, identities)
      expect(() => Schema.validateSync(User)(user)).not.toThrow()
      expect(wire(user)).toStrictEqual(wire(Schema.encodeSync(User)(user)))
    })

  it.prop("answers a session with the bytes of its encoding", [userRow, FastCheck.array(identityRow, { maxLength: 2 })],
    ([row, identities]) => {
      const session = new Session({
        access_token: "a.b.c",
        token_type: "bearer",
        expires_in: 3600,
        expires_at: 1_800_000_000,
        refresh_token: "r".repeat(43),
        user: userJson(row, identities)
      })
      expect(bodyOf(session)).toStrictEqual(wire(Schema.encodeSync(Session)(session)))
      expect(bodyOf(session.user)).toStrictEqual(wire(Schema.encodeSync(User)(session.user)))
    }, { fastCheck: { numRuns: 50 } })

  it("never sends a secret column", () => {
    const row = FastCheck.sample(userRow, { seed: 7, numRuns: 1 })[0]!
    const secrets = { ...row, encrypted_password: "$2a$10$secret", confirmation_token: "tok-1", recovery_token: "tok-2", reauthentication_token: "tok-3" }
    const sent = JSON.stringify(userJson(secrets, []))
    for (const secret of ["$2a$10$secret", "tok-1", "tok-2", "tok-3"]) expect(sent).not.toContain(secret)
  })

  it("sends a metadata key named __proto__ back as stored", () => {
    const row = FastCheck.sample(userRow, { seed: 7, numRuns: 1 })[0]!
    const metadata = JSON.parse('{"__proto__": {"admin": true}, "name": "x"}') as Record<string, unknown>
    expect(wire(userJson({ ...row, raw_user_meta_data: metadata }, [])))
      .toMatchObject({ user_metadata: JSON.parse('{"__proto__": {"admin": true}, "name": "x"}') })
    expect(JSON.stringify(userJson({ ...row, raw_user_meta_data: metadata }, []))).toContain('"__proto__":{"admin":true}')
  })
})

describe("the session id noted beside a Session (issue 30 H3)", () => {
  const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const tokenFor = (sessionId: string) => `${segment({ alg: "HS256", typ: "JWT" })}.${segment({ session_id: sessionId })}.c2ln`

  it.prop("changes neither the bytes nor the headers, and a copy of the Session does not carry it", [userRow, FastCheck.uuid()],
    ([row, sessionId]) => {
      const fields = {
        access_token: tokenFor(sessionId),
        token_type: "bearer",
        expires_in: 3600,
        expires_at: 1_800_000_000,
        refresh_token: "r".repeat(43),
        user: userJson(row, [])
      } as const
      const plain = new Session(fields, true)
      const noted = withSessionId(new Session(fields, true), sessionId)
      expect(sessionIdOf(noted)).toBe(sessionId)
      expect(sessionIdOf(plain)).toBeUndefined()
      expect(JSON.stringify(noted)).toBe(JSON.stringify(plain))
      expect(bodyOf(noted)).toStrictEqual(bodyOf(plain))
      expect(Schema.encodeSync(Session)(noted)).toStrictEqual(Schema.encodeSync(Session)(plain))
      expect(noted).toStrictEqual(plain)
      // The headers read from the note are the ones decoding the token gives.
      expect(sessionHeaders(noted)).toStrictEqual(sessionHeaders(plain))
      expect(sessionHeaders(plain)["sb-auth-session-id"]).toBe(sessionId)
      expect(sessionIdOf(new Session({ ...noted, weak_password: { message: "m", reasons: [] } }))).toBeUndefined()
    }, { fastCheck: { numRuns: 50 } })
})
