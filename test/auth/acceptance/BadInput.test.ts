/**
 * Whatever a client sends to the body-reading endpoints, the answer is a 4xx in GoTrue's envelope (legacy and
 * 2024-01-01 alike), never a 500 or a stack trace, and it never repeats the password or token it was sent.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, raw, type RawResponse, uniqueEmail } from "./AcceptanceKit.js"

/** The password in every body below: it must never come back in a response. */
const SECRET = "Sekr1t-Never-Echoed-4F7c"

interface Expected {
  readonly status: number
  readonly code: string
  readonly message?: string
}

interface Case {
  readonly name: string
  /** A string is sent verbatim; undefined sends no body at all. */
  readonly body: unknown
  readonly expected: Expected
}

const invalidField = (field: string): Expected => ({
  status: 400,
  code: "validation_failed",
  message: `Invalid request: "${field}" has an invalid value`
})
const badJson: Expected = { status: 400, code: "bad_json", message: "Could not parse request body as JSON" }
const notAnObject: Expected = { status: 400, code: "validation_failed", message: "Invalid request: the request has an invalid value" }
const tooLarge: Expected = { status: 413, code: "request_entity_too_large", message: "Request entity too large" }
const tooLongPassword: Expected = { status: 400, code: "validation_failed", message: "Password cannot be longer than 72 characters" }
const invalidCredentials: Expected = { status: 400, code: "invalid_credentials", message: "Invalid login credentials" }
const invalidRefreshToken: Expected = { status: 400, code: "validation_failed", message: "Refresh token is not valid" }

const longPassword = `Aa1-${SECRET}-${"x".repeat(100 - SECRET.length - 5)}`
const hugeEmail = `${"a".repeat(10_000)}@example.com`
/** Just over GoTrue's 1 MB body limit, as valid JSON. */
const overMegabyte = JSON.stringify({ email: "big@example.com", password: SECRET, data: { blob: "x".repeat(1024 * 1024) } })

/** What every body-reading endpoint answers the same way. */
const anyBody: ReadonlyArray<Case> = [
  { name: "malformed JSON holding the password", body: `{"email":"a@example.com","password":"${SECRET}`, expected: badJson },
  { name: "a JSON syntax error after the password", body: `{"password":"${SECRET}",}`, expected: badJson },
  { name: "no body", body: undefined, expected: notAnObject },
  { name: "an empty body", body: "", expected: notAnObject },
  { name: "a JSON array", body: "[]", expected: notAnObject },
  { name: "JSON null", body: "null", expected: notAnObject },
  { name: "a JSON number", body: "42", expected: notAnObject },
  { name: "a JSON string", body: `"${SECRET}"`, expected: notAnObject },
  { name: "a body over 1 MB", body: overMegabyte, expected: tooLarge },
  { name: "arrays nested 5,000 deep", body: `${"[".repeat(5_000)}${"]".repeat(5_000)}`, expected: badJson },
  { name: "a password nested 5,000 deep", body: `{"password":${"[".repeat(5_000)}"${SECRET}"${"]".repeat(5_000)}}`, expected: badJson }
]

const endpoints: ReadonlyArray<{
  readonly name: string
  readonly method: "POST" | "PUT"
  readonly path: string
  readonly bearer: boolean
  readonly cases: (context: { readonly email: string }) => ReadonlyArray<Case>
}> = [
  {
    name: "POST /signup",
    method: "POST",
    path: "/signup",
    bearer: false,
    cases: () => [
      { name: "password: 123", body: { email: uniqueEmail("t"), password: 123 }, expected: invalidField("password") },
      { name: "password: true", body: { email: uniqueEmail("t"), password: true }, expected: invalidField("password") },
      { name: "email: {}", body: { email: {}, password: SECRET }, expected: invalidField("email") },
      { name: "phone as a number", body: { phone: 15555550123, password: SECRET }, expected: invalidField("phone") },
      { name: "data: \"x\"", body: { email: uniqueEmail("t"), password: SECRET, data: "x" }, expected: invalidField("data") },
      { name: "data: [1, 2]", body: { email: uniqueEmail("t"), password: SECRET, data: [1, 2] }, expected: invalidField("data") },
      {
        name: "gotrue_meta_security: \"x\"",
        body: { email: uniqueEmail("t"), password: SECRET, gotrue_meta_security: "x" },
        expected: invalidField("gotrue_meta_security")
      },
      {
        name: "password: null",
        body: { email: uniqueEmail("t"), password: null },
        expected: { status: 400, code: "validation_failed", message: "Signup requires a valid password" }
      },
      {
        // null is absent, as in GoTrue: no email and no phone is an anonymous sign-in, which is off here.
        name: "everything null",
        body: { email: null, phone: null, password: null, data: null },
        expected: { status: 422, code: "anonymous_provider_disabled", message: "Anonymous sign-ins are disabled" }
      },
      {
        name: "an email of 10k characters",
        body: { email: hugeEmail, password: SECRET },
        expected: { status: 400, code: "validation_failed", message: "An email address is too long" }
      },
      { name: "a password of 100 characters", body: { email: uniqueEmail("t"), password: longPassword }, expected: tooLongPassword },
      {
        name: "an email that is not one",
        body: { email: `not-an-email-${SECRET}`, password: SECRET },
        expected: { status: 400, code: "validation_failed", message: "Unable to validate email address: invalid format" }
      },
      ...anyBody
    ]
  },
  {
    name: "POST /token?grant_type=password",
    method: "POST",
    path: "/token?grant_type=password",
    bearer: false,
    cases: ({ email }) => [
      { name: "password: 123", body: { email, password: 123 }, expected: invalidField("password") },
      { name: "email: {}", body: { email: {}, password: SECRET }, expected: invalidField("email") },
      { name: "phone: []", body: { phone: [], password: SECRET }, expected: invalidField("phone") },
      {
        name: "email and password null",
        body: { email: null, password: null },
        expected: { status: 400, code: "validation_failed", message: "missing email or phone" }
      },
      { name: "password: null", body: { email, password: null }, expected: invalidCredentials },
      { name: "an email of 10k characters", body: { email: hugeEmail, password: SECRET }, expected: invalidCredentials },
      { name: "a password of 100 characters", body: { email, password: longPassword }, expected: invalidCredentials },
      ...anyBody
    ]
  },
  {
    name: "POST /token?grant_type=refresh_token",
    method: "POST",
    path: "/token?grant_type=refresh_token",
    bearer: false,
    cases: () => [
      { name: "refresh_token: 123", body: { refresh_token: 123 }, expected: invalidField("refresh_token") },
      { name: "refresh_token: {}", body: { refresh_token: {} }, expected: invalidField("refresh_token") },
      { name: "refresh_token: null", body: { refresh_token: null }, expected: invalidRefreshToken },
      { name: "no refresh_token", body: { password: SECRET }, expected: invalidRefreshToken },
      { name: "a refresh token of 10k characters", body: { refresh_token: `${SECRET}${"a".repeat(10_000)}` }, expected: invalidRefreshToken },
      ...anyBody
    ]
  },
  {
    name: "PUT /user",
    method: "PUT",
    path: "/user",
    bearer: true,
    cases: () => [
      { name: "data: \"x\"", body: { data: "x" }, expected: invalidField("data") },
      { name: "data: [1, 2]", body: { data: [1, 2] }, expected: invalidField("data") },
      { name: "password: 123", body: { password: 123 }, expected: invalidField("password") },
      { name: "email: {}", body: { email: {} }, expected: invalidField("email") },
      { name: "nonce: 123456", body: { password: SECRET, nonce: 123456 }, expected: invalidField("nonce") },
      { name: "a password of 100 characters", body: { password: longPassword }, expected: tooLongPassword },
      {
        name: "an email of 10k characters",
        body: { email: hugeEmail },
        expected: { status: 400, code: "validation_failed", message: "An email address is too long" }
      },
      {
        name: "a phone that is not E.164",
        body: { phone: `+${SECRET}` },
        expected: { status: 400, code: "validation_failed", message: "Invalid phone number format (E.164 required)" }
      },
      {
        name: "app_metadata from a user",
        body: { app_metadata: { role: "admin" } },
        expected: { status: 403, code: "not_admin" }
      },
      ...anyBody
    ]
  }
]

/** The checks every error response must pass, in whichever envelope it was asked for. */
const expectEnvelope = (response: RawResponse, expected: Expected, versioned: boolean, context: string) => {
  expect(response.status, context).toBe(expected.status)
  expect(response.headers.get("content-type"), context).toMatch(/^application\/json/)
  expect(response.headers.get("x-sb-error-code"), context).toBe(expected.code)
  const message = expected.message ?? expect.any(String)
  if (versioned) {
    expect(response.headers.get("x-supabase-api-version"), context).toBe("2024-01-01")
    expect(response.json, context).toEqual({ code: expected.code, message })
  } else {
    expect(response.headers.get("x-supabase-api-version"), context).toBeNull()
    expect(response.json, context).toEqual({ code: expected.status, error_code: expected.code, msg: message })
  }
  expect(response.text, context).not.toContain(SECRET)
  expect(response.text, context).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/)
}

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })("bad input", (it) => {
  for (const endpoint of endpoints) {
    it.effect(`${endpoint.name}: every malformed body is a 4xx in both envelopes and never echoes the password`, () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("input")
        const { data } = yield* call(() => authClient(url).client.signUp({ email, password: `${SECRET}-Own` }))
        const bearer = data.session!.access_token
        for (const testCase of endpoint.cases({ email })) {
          for (const versioned of [false, true]) {
            const response = yield* raw(url, endpoint.path, {
              method: endpoint.method,
              ...(testCase.body === undefined ? {} : { body: testCase.body }),
              apiVersion: versioned,
              ...(endpoint.bearer ? { bearer } : {})
            })
            expectEnvelope(response, testCase.expected, versioned, `${endpoint.name} with ${testCase.name}`)
          }
        }
        // None of that broke the account.
        expect((yield* raw(url, "/user", { bearer })).status).toBe(200)
      }))
  }

  it.effect("a JSON body sent as a form or as plain text is read as JSON, as GoTrue reads it (curl -d)", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      for (const contentType of ["application/x-www-form-urlencoded", "text/plain;charset=UTF-8"]) {
        const email = uniqueEmail("as-json")
        const signup = yield* raw(url, "/signup", { body: { email, password: SECRET }, headers: { "content-type": contentType } })
        expect(signup.status, contentType).toBe(200)
        const token = yield* raw(url, "/token?grant_type=password", {
          body: { email, password: SECRET },
          headers: { "content-type": contentType }
        })
        expect(token.status, contentType).toBe(200)
        expect((token.json as { user: { email: string } }).user.email, contentType).toBe(email)
      }
    }))

  it.effect("multipart, XML and binary bodies are read as JSON as GoTrue reads them: 400 bad_json, never a parser's 500", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { data } = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("types"), password: SECRET }))
      const bearer = data.session!.access_token
      const form = `--b\r\nContent-Disposition: form-data; name="password"\r\n\r\n${SECRET}\r\n--b--\r\n`
      const bodies: ReadonlyArray<readonly [string, string, Expected]> = [
        ["multipart/form-data; boundary=b", form, badJson],
        ["multipart/form-data", form, badJson],
        // Empty is empty under any content type (with a boundary, the multipart parser never answered it).
        ["multipart/form-data; boundary=b", "", notAnObject],
        ["application/xml", `<password>${SECRET}</password>`, badJson],
        ["application/octet-stream", "\u0000\u0001", badJson]
      ]
      for (const [contentType, body, expected] of bodies) {
        for (const [method, path] of [["POST", "/signup"], ["POST", "/token?grant_type=password"], ["PUT", "/user"]] as const) {
          const response = yield* raw(url, path, { method, body, bearer, headers: { "content-type": contentType } })
          expectEnvelope(response, expected, false, `${method} ${path} as ${contentType}`)
        }
      }
      // GoTrue's reading, not a refusal: a JSON body under any content type still works.
      const token = yield* raw(url, "/token?grant_type=password", {
        body: { email: data.user!.email, password: SECRET },
        headers: { "content-type": "application/octet-stream" }
      })
      expect(token.status).toBe(200)
    }))

  it.effect("a chunked body over 1 MB (no Content-Length) is a 413 the client gets to read, not a reset connection", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const chunk = new TextEncoder().encode(`{"password":"${SECRET}","pad":"${"x".repeat(64 * 1024)}`)
      for (const versioned of [false, true]) {
        let sent = 0
        const response = yield* call(async () => {
          const answer = await fetch(`${url}/signup`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(versioned ? { "x-supabase-api-version": "2024-01-01" } : {}) },
            body: new ReadableStream({
              pull: (controller) => sent++ < 20 ? controller.enqueue(chunk) : controller.close()
            }),
            duplex: "half"
          } as RequestInit)
          const text = await answer.text()
          return { status: answer.status, headers: answer.headers, text, json: JSON.parse(text) }
        })
        expectEnvelope(response, tooLarge, versioned, "chunked")
      }
      expect((yield* raw(url, "/health")).status).toBe(200)
    }))

  it.effect("the NUL character, which PostgreSQL cannot store, is a 400 in any field, not a database error", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("nul")
      const { data } = yield* call(() => authClient(url).client.signUp({ email, password: SECRET }))
      const bearer = data.session!.access_token
      const requests = [
        raw(url, "/token?grant_type=password", { body: { email: "a\u0000b@example.com", password: SECRET } }),
        raw(url, "/token?grant_type=password", { body: { phone: "1555\u00000100", password: SECRET } }),
        raw(url, "/signup", { body: { email: uniqueEmail("nul2"), password: SECRET, data: { note: "a\u0000b" } } }),
        raw(url, "/signup", { body: { email: uniqueEmail("nul3"), password: SECRET, data: { deep: [{ "k\u0000": 1 }] } } }),
        raw(url, "/user", { method: "PUT", bearer, body: { data: { note: "a\u0000b" } } })
      ]
      for (const response of yield* Effect.all(requests)) {
        expect(response.status).toBe(400)
        expect(response.json).toMatchObject({ code: 400, error_code: "validation_failed" })
        expect(response.text).not.toContain(SECRET)
      }
    }))

  it.effect("unknown fields are ignored on every endpoint", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("extra")
      const extra = { favourite_colour: "blue", is_admin: true, role: "service_role", nested: { a: [1] } }
      const signUp = yield* raw(url, "/signup", { body: { email, password: SECRET, ...extra } })
      expect(signUp.status).toBe(200)
      expect(signUp.json.user.role).toBe("authenticated")
      const signIn = yield* raw(url, "/token?grant_type=password", { body: { email, password: SECRET, ...extra } })
      expect(signIn.status).toBe(200)
      const refresh = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: signIn.json.refresh_token, ...extra } })
      expect(refresh.status).toBe(200)
      const update = yield* raw(url, "/user", {
        method: "PUT",
        bearer: refresh.json.access_token,
        body: { data: { ok: true }, ...extra }
      })
      expect(update.status).toBe(200)
      expect(update.json.user_metadata).toMatchObject({ ok: true })
      expect(update.json.user_metadata).not.toHaveProperty("favourite_colour")
      expect(update.json.role).toBe("authenticated")
      for (const response of [signUp, signIn, refresh, update]) expect(response.text).not.toContain(SECRET)
    }))

  it.effect("null fields in PUT /user mean \"not given\", as in GoTrue: nothing changes", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { data } = yield* call(() =>
        authClient(url).client.signUp({ email: uniqueEmail("nulls"), password: SECRET, options: { data: { kept: 1 } } })
      )
      const bearer = data.session!.access_token
      const response = yield* raw(url, "/user", {
        method: "PUT",
        bearer,
        body: { email: null, phone: null, password: null, nonce: null, data: null, app_metadata: null }
      })
      expect(response.status).toBe(200)
      expect(response.json).toMatchObject({ email: data.user!.email, user_metadata: { kept: 1 } })
      expect((yield* raw(url, "/token?grant_type=password", { body: { email: data.user!.email, password: SECRET } })).status).toBe(200)
    }))

  it.effect("an unsupported or missing grant_type is a 400 invalid_credentials", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      for (const query of ["", "?grant_type=", "?grant_type=magic", "?grant_type=PASSWORD", "?grant_type=authorization_code"]) {
        for (const versioned of [false, true]) {
          const response = yield* raw(url, `/token${query}`, { body: { email: "a@example.com", password: SECRET }, apiVersion: versioned })
          expectEnvelope(response, { status: 400, code: "invalid_credentials", message: "unsupported_grant_type" }, versioned, query)
        }
      }
    }))

  it.effect("POST /logout with a bogus or oversized scope is a 400 and a body over 1 MB a 413", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { data } = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("logout"), password: SECRET }))
      const bearer = data.session!.access_token
      for (const versioned of [false, true]) {
        expectEnvelope(
          yield* raw(url, "/logout?scope=bogus", { method: "POST", bearer, apiVersion: versioned }),
          { status: 400, code: "validation_failed", message: "Unsupported logout scope \"bogus\"" },
          versioned,
          "bogus"
        )
        const long = yield* raw(url, `/logout?scope=${"s".repeat(10_000)}`, { method: "POST", bearer, apiVersion: versioned })
        expectEnvelope(long, { status: 400, code: "validation_failed" }, versioned, "long scope")
        expect(long.text.length).toBeLessThan(200)
        expectEnvelope(
          yield* raw(url, "/logout", { method: "POST", bearer, body: overMegabyte, apiVersion: versioned }),
          tooLarge,
          versioned,
          "huge body"
        )
      }
      // The session survived all of it.
      expect((yield* raw(url, "/user", { bearer })).status).toBe(200)
    }))

  it.effect("auth-js surfaces a schema failure as an AuthApiError with the code, not a crash", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const { data, error } = yield* call(() =>
        client.signUp({ email: uniqueEmail("typed"), password: SECRET, options: { data: "x" as unknown as object } })
      )
      expect(data.user).toBeNull()
      expect(error).toMatchObject({ name: "AuthApiError", status: 400, code: "validation_failed" })
      expect(error!.message).not.toContain(SECRET)
    }))
})
