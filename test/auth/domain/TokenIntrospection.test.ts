import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { accessTokenSession, activeAnswer, readIntrospectionBody } from "../../../src/auth/domain/TokenIntrospection.js"

const FORM = "application/x-www-form-urlencoded"
const NIL = "00000000-0000-0000-0000-000000000000"

describe("readIntrospectionBody", () => {
  it("reads the form's token and hint, the first value of each, and ignores the rest", () => {
    expect(readIntrospectionBody(FORM, "token=a.b%2Bc&token_type_hint=access_token&client_id=x&token=second"))
      .toEqual({ token: "a.b+c", token_type_hint: "access_token" })
    expect(readIntrospectionBody(`${FORM}; charset=utf-8`, "token=a+b")).toEqual({ token: "a b", token_type_hint: "" })
    expect(readIntrospectionBody(FORM, "")).toEqual({ token: "", token_type_hint: "" })
  })

  it("reads a JSON object; a field of the wrong type, or any other JSON, is unreadable", () => {
    expect(readIntrospectionBody("application/json", JSON.stringify({ token: "t", other: 1 }))).toEqual({ token: "t", token_type_hint: "" })
    expect(readIntrospectionBody("application/json", JSON.stringify({ token: null }))).toEqual({ token: "", token_type_hint: "" })
    for (const body of ["[1]", "\"t\"", "{", JSON.stringify({ token: 1 }), JSON.stringify({ token_type_hint: [] })]) {
      expect(readIntrospectionBody("application/json", body)).toBeUndefined()
    }
  })

  it("a bad escape is unreadable; a body of another type is unreadable unless empty", () => {
    expect(readIntrospectionBody(FORM, "token=%zz")).toBeUndefined()
    expect(readIntrospectionBody("text/plain", "token=x")).toBeUndefined()
    expect(readIntrospectionBody("", "")).toEqual({ token: "", token_type_hint: "" })
  })

  it.prop("any token round-trips through a form, whatever its characters", [FastCheck.string({ unit: "grapheme", maxLength: 200 })], ([token]) => {
    expect(readIntrospectionBody(FORM, new URLSearchParams({ token }).toString())?.token).toBe(token)
  })

  it.prop("never throws on any body", [FastCheck.string({ maxLength: 200 }), FastCheck.constantFrom(FORM, "application/json", "", "text/plain")], ([body, type]) => {
    readIntrospectionBody(type, body)
  })
})

describe("accessTokenSession", () => {
  const user = "3f1e7c3a-54b4-4d6c-9e6e-5a0f3b8c1d2e"
  const session = "7b2d0c4e-1a3f-4e5d-8c9b-0a1b2c3d4e5f"

  it("names the user and session of an access token's claims, in lower case", () => {
    expect(accessTokenSession({ sub: user.toUpperCase(), session_id: session, exp: 1 })).toEqual({ userId: user, sessionId: session })
  })

  it.each([
    { sub: user, exp: 1 },
    { sub: user, session_id: NIL, exp: 1 },
    { sub: user, session_id: "x", exp: 1 },
    { sub: "1234567890", session_id: session, exp: 1 },
    { session_id: session, exp: 1 },
    { sub: user, session_id: session },
    { sub: user, session_id: session, exp: "1" },
    { role: "service_role", iss: "supabase" }
  ])("is undefined for claims that are not an access token's: %j", (claims) => {
    expect(accessTokenSession(claims)).toBeUndefined()
  })
})

describe("activeAnswer", () => {
  const session = { userId: "u", sessionId: "s" }

  it("takes RFC 7662's members from the claims, and the user's address as it is now", () => {
    expect(activeAnswer({
      sub: "U", exp: 20, iat: 10, iss: "https://auth.example.com", aud: "authenticated", scope: "email profile", client_id: "c",
      session_id: "S", aal: "aal2", role: "authenticated", email: "old@example.com", app_metadata: { secret: 1 }, amr: []
    }, session, "new@example.com")).toEqual({
      active: true, token_type: "access_token", sub: "u", exp: 20, iat: 10, iss: "https://auth.example.com", aud: "authenticated",
      scope: "email profile", client_id: "c", session_id: "s", aal: "aal2", role: "authenticated", username: "new@example.com"
    })
  })

  it.prop("never says more than its members, and each only with its type", [
    FastCheck.dictionary(FastCheck.constantFrom("iat", "iss", "aud", "scope", "client_id", "aal", "role", "x", "app_metadata"), FastCheck.anything()),
    FastCheck.option(FastCheck.string(), { nil: null })
  ], ([claims, email]) => {
    const answer: Record<string, unknown> = { ...activeAnswer({ ...claims, exp: 5 }, session, email) }
    const members = ["active", "token_type", "sub", "exp", "iat", "iss", "aud", "scope", "client_id", "session_id", "aal", "role", "username"]
    for (const key of Object.keys(answer)) expect(members).toContain(key)
    for (const key of ["iss", "scope", "client_id", "aal", "role", "username"]) {
      if (key in answer) expect(typeof answer[key]).toBe("string")
    }
    if ("iat" in answer) expect(typeof answer["iat"]).toBe("number")
    if ("aud" in answer) expect(typeof answer["aud"] === "string" || Array.isArray(answer["aud"])).toBe(true)
  })
})
