import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { goQueryEscape } from "../../../src/auth/domain/OAuthRedirect.js"
import { readTokenBody, TOKEN_FIELDS } from "../../../src/auth/domain/OAuthTokenRequest.js"

const FORM = "application/x-www-form-urlencoded"
const request = (contentType: string, body: string, query = "") => ({ authorization: undefined, contentType, body, query })
const empty = Object.fromEntries(TOKEN_FIELDS.map((f) => [f, ""]))

describe("a token request's body", () => {
  it("reads a form: decoded, the first value kept, the query string after the body, resource left out", () => {
    expect(readTokenBody(request(`${FORM}; charset=utf-8`, "grant_type=authorization_code&code=a%2Bb+c&code=second&unknown=1&resource=https%3A%2F%2Fapi", "code=q&client_id=c1")))
      .toEqual({ ...empty, grant_type: "authorization_code", code: "a+b c", client_id: "c1" })
    expect(readTokenBody(request(FORM, "code=%00"))).toEqual({ ...empty, code: "\u0000" })
  })

  it("refuses a malformed escape in a form, and reads no body of another type but the query", () => {
    expect(readTokenBody(request(FORM, "code=%zz"))).toBe("bad_form")
    expect(readTokenBody(request(FORM, "", "code=%"))).toBe("bad_form")
    expect(readTokenBody(request("text/plain", "code=abc", "grant_type=x"))).toEqual({ ...empty, grant_type: "x" })
  })

  it("reads JSON: strings taken, null and absent left empty, resource read; a typed field of another type fails the body", () => {
    expect(readTokenBody(request("application/json", JSON.stringify({ grant_type: "refresh_token", refresh_token: "r", resource: "https://api", code: null, x: 1 }))))
      .toEqual({ ...empty, grant_type: "refresh_token", refresh_token: "r", resource: "https://api" })
    expect(readTokenBody(request("application/json", JSON.stringify({ code: 5 })))).toBe("bad_json")
    // The client check types only its own two fields: another field's type is the handler's business.
    expect(readTokenBody(request("application/json", JSON.stringify({ code: 5, client_id: "c" })), ["client_id", "client_secret"]))
      .toEqual({ ...empty, client_id: "c" })
    expect(readTokenBody(request("application/json", JSON.stringify({ client_id: 5 })), ["client_id", "client_secret"])).toBe("bad_json")
    for (const body of ["", "{", "[]", "null", "\"code\""]) expect(readTokenBody(request("application/json", body)), body).toBe("bad_json")
  })

  it.prop("any value Go's QueryEscape wrote is read back as it was", [FastCheck.string({ unit: "grapheme" })], ([value]) => {
    const fields = readTokenBody(request(FORM, `code_verifier=${goQueryEscape(value)}`))
    expect(fields).toEqual({ ...empty, code_verifier: value })
  })
})
