/**
 * The captcha middleware on its own, over CaptchaTest: what it sends the provider and how it answers each verdict.
 * The full server with the live provider port is test/auth/acceptance/Captcha.test.ts.
 */
import { HttpServerRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { CaptchaProtected, TokenCaptchaProtected } from "../../src/auth/contract/CaptchaProtected.js"
import type { AuthError } from "../../src/auth/domain/AuthError.js"
import { CaptchaProtectedLive, TokenCaptchaProtectedLive } from "../../src/auth/http/CaptchaProtectedLive.js"
import { configLayer } from "../../src/config/AppConfig.js"
import { type CaptchaCheck, CaptchaChecks, CaptchaTest, CaptchaUnavailable } from "../../src/platform/Captcha.js"
import { CaptchaVerdict } from "../../src/domain/CaptchaVerdict.js"
import { tokenSignerFor } from "../../src/platform/PortsLive.js"
import { MemoryRepos } from "./support/MemoryRepos.js"
import { testConfig } from "../support/TestServer.js"
import { adminJwt } from "./acceptance/AcceptanceKit.js"

const PASSING = "solved"

/** A provider that passes PASSING, refuses other tokens, and is down for "down:<reason>". */
const provider = (check: CaptchaCheck) => {
  const down = /^down:(timeout|unreachable|unexpected_answer)$/.exec(check.token)
  if (down !== null) {
    const reason = down[1] as CaptchaUnavailable["reason"]
    return Effect.fail(new CaptchaUnavailable({ provider: "hcaptcha", reason, message: `test: ${reason}` }))
  }
  return Effect.succeed(
    check.token === PASSING ? CaptchaVerdict.Passed() : CaptchaVerdict.Rejected({ errorCodes: ["invalid-input-response", "timeout-or-duplicate"] })
  )
}

const guards = (env: Readonly<Record<string, string>> = {}) => {
  const config = testConfig({ AUTH_SECURITY_CAPTCHA_ENABLED: "true", AUTH_SECURITY_CAPTCHA_SECRET: "captcha-secret", ...env })
  return Layer.mergeAll(CaptchaProtectedLive, TokenCaptchaProtectedLive).pipe(
    Layer.provideMerge(CaptchaTest(provider)),
    Layer.provide(Layer.orDie(tokenSignerFor(config))),
    Layer.provide(MemoryRepos()),
    Layer.provide(configLayer(config))
  )
}

interface Sent {
  readonly headers?: Record<string, string>
  /** The connection's peer address. */
  readonly peer?: string
}

/**
 * Runs the middleware of `path`'s group on a JSON POST. A middleware may read only the request and its query
 * (HttpRouter.Provided also names the route and a scope, which these do not use).
 */
const post = (path: string, body: unknown, sent: Sent = {}): Effect.Effect<void, AuthError, CaptchaProtected | TokenCaptchaProtected> =>
  Effect.gen(function*() {
    const url = new URL(path, "http://gatehouse.test")
    const web = new Request(url, { method: "POST", headers: { "content-type": "application/json", ...sent.headers }, body: JSON.stringify(body) })
    const request = HttpServerRequest.fromWeb(web).modify(sent.peer === undefined ? {} : { remoteAddress: sent.peer })
    const guard = url.pathname === "/token" ? yield* TokenCaptchaProtected : yield* CaptchaProtected
    const params: Record<string, string | Array<string>> = {}
    for (const [key, value] of url.searchParams) {
      const seen = params[key]
      params[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value]
    }
    return yield* (guard as Effect.Effect<void, AuthError, HttpServerRequest.HttpServerRequest | HttpServerRequest.ParsedSearchParams>).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, request),
      Effect.provideService(HttpServerRequest.ParsedSearchParams, params)
    )
  })

const asked = Effect.flatMap(CaptchaChecks, ({ checks }) => Ref.getAndSet(checks, []))

const withToken = (token: string) => ({ email: "a@example.com", gotrue_meta_security: { captcha_token: token } })

describe("CaptchaProtected", () => {
  it.effect("passes a solved token, telling the provider the connection's address", () =>
    Effect.gen(function*() {
      yield* post("/signup", withToken(` ${PASSING} `), { peer: "198.51.100.4" })
      expect(yield* asked).toStrictEqual([{ token: PASSING, remoteIp: "198.51.100.4" }])
    }).pipe(Effect.provide(guards())))

  it.effect("behind a proxy, tells the provider the address in RATE_LIMIT_HEADER", () =>
    Effect.gen(function*() {
      yield* post("/otp", withToken(PASSING), { peer: "10.0.0.1", headers: { "X-Real-IP": "203.0.113.9" } })
      yield* post("/otp", withToken(PASSING), { peer: "10.0.0.1" })
      expect((yield* asked).map((check) => check.remoteIp)).toStrictEqual(["203.0.113.9", "10.0.0.1"])
    }).pipe(Effect.provide(guards({ AUTH_RATE_LIMIT_HEADER: "X-Real-IP" }))))

  it.effect("refuses a missing token without asking the provider, and a refused one with its codes", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(post("/recover", { email: "a@example.com" }))).toMatchObject({
        status: 400,
        code: "captcha_failed",
        message: "captcha protection: request disallowed (no captcha_token)"
      })
      expect(yield* asked).toStrictEqual([])
      expect(yield* Effect.flip(post("/resend", withToken("forged")))).toMatchObject({
        status: 400,
        code: "captcha_failed",
        message: "captcha protection: request disallowed (invalid-input-response, timeout-or-duplicate)"
      })
    }).pipe(Effect.provide(guards())))

  it.effect("an unavailable provider is a 503 for every reason", () =>
    Effect.gen(function*() {
      for (const reason of ["timeout", "unreachable", "unexpected_answer"]) {
        const error = yield* Effect.flip(post("/signup", withToken(`down:${reason}`)))
        expect(error).toMatchObject({ status: 503, code: "captcha_failed" })
        expect(error.message).toMatch(/^captcha protection: verification unavailable \(/)
        expect(error.message).not.toContain("test:")
      }
    }).pipe(Effect.provide(guards())))

  it.effect("is off unless SECURITY_CAPTCHA_ENABLED", () =>
    Effect.gen(function*() {
      yield* post("/signup", { email: "a@example.com" })
      yield* post("/token?grant_type=password", { email: "a@example.com", password: "x" })
      expect(yield* asked).toStrictEqual([])
    }).pipe(Effect.provide(guards({ AUTH_SECURITY_CAPTCHA_ENABLED: "false" }))))

  it.effect("an admin JWT skips the check; a user's role does not", () =>
    Effect.gen(function*() {
      yield* post("/signup", {}, { headers: { authorization: `Bearer ${adminJwt("supabase_admin")}` } })
      expect(yield* asked).toStrictEqual([])
      expect(yield* Effect.flip(post("/signup", {}, { headers: { authorization: `Bearer ${adminJwt("authenticated")}` } })))
        .toMatchObject({ code: "captcha_failed" })
    }).pipe(Effect.provide(guards())))

  it.effect("the admin roles are JWT_ADMIN_ROLES'", () =>
    Effect.gen(function*() {
      yield* post("/signup", {}, { headers: { authorization: `Bearer ${adminJwt("operator")}` } })
      expect(yield* Effect.flip(post("/signup", {}, { headers: { authorization: `Bearer ${adminJwt("service_role")}` } })))
        .toMatchObject({ code: "captcha_failed" })
    }).pipe(Effect.provide(guards({ AUTH_JWT_ADMIN_ROLES: "operator" }))))
})

describe("TokenCaptchaProtected", () => {
  it.effect("checks the password grant and skips refresh_token, pkce and id_token", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(post("/token?grant_type=password", { email: "a@example.com", password: "x" })))
        .toMatchObject({ code: "captcha_failed" })
      for (const grant of ["refresh_token", "pkce", "id_token"]) yield* post(`/token?grant_type=${grant}`, {})
      expect(yield* asked).toStrictEqual([])
    }).pipe(Effect.provide(guards())))

  it.effect("a missing, unknown or repeated grant_type needs a captcha", () =>
    Effect.gen(function*() {
      for (const path of ["/token", "/token?grant_type=web3", "/token?grant_type=pkce&grant_type=password"]) {
        expect(yield* Effect.flip(post(path, {}))).toMatchObject({ code: "captcha_failed" })
      }
    }).pipe(Effect.provide(guards())))
})
