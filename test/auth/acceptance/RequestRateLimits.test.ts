/**
 * The per-IP request limits over HTTP, through auth-js and fetch: keyed on RATE_LIMIT_HEADER, one bucket per client
 * shared by two server instances over one database, GoTrue's 429 over_request_rate_limit with Retry-After, every
 * limited route wired, and nothing limited without the header.
 *
 * Nothing waits on a clock: the rates are set so that no bucket refills while a test runs (one request per five
 * minutes after the burst), or to 0, which refuses every keyed request.
 */
import { expect } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { ServerUrl, TestServerOver } from "../../support/TestServer.js"
import { acceptance, authClient, call, mailTo, PASSWORD, raw, type RawResponse, refusals, uniqueEmail, versionedError } from "./AcceptanceKit.js"

const HEADER = "X-Forwarded-For"
/** GoTrue's fixed burst for /token: RATE_LIMIT_TOKEN_REFRESH sets only the refill. */
const TOKEN_BURST = 30

/** The Retry-After of a refusal: whole seconds, at least 1, no more than one interval of the rate. */
const retryAfterOf = (response: RawResponse, intervalSeconds: number): number => {
  const value = response.headers.get("retry-after") ?? ""
  expect(value).toMatch(/^[1-9]\d*$/)
  expect(Number(value)).toBeLessThanOrEqual(intervalSeconds)
  return Number(value)
}

const expectLimited = (response: RawResponse, intervalSeconds: number) => {
  expect([response.status, response.json]).toEqual([429, versionedError("over_request_rate_limit", "Request rate limit reached")])
  expect(response.headers.get("x-sb-error-code")).toBe("over_request_rate_limit")
  retryAfterOf(response, intervalSeconds)
}


const passwordGrant = (url: string, email: string, headers: Record<string, string>) =>
  raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD }, headers, apiVersion: true })

const TWO_INSTANCES_ENV = {
  AUTH_RATE_LIMIT_HEADER: HEADER,
  // After the burst of 30, one sign-in per five minutes: nothing refills during the test.
  AUTH_RATE_LIMIT_TOKEN_REFRESH: "1",
  AUTH_MAILER_AUTOCONFIRM: "true"
}

acceptance(TWO_INSTANCES_ENV)("per-IP limits across two instances", (it) => {
  it.scoped("one client's bucket is shared by both servers: the burst passes alternating between them, the next is 429", () =>
    Effect.gen(function*() {
      const first = yield* ServerUrl
      const other = yield* Layer.build(Layer.fresh(TestServerOver(TWO_INSTANCES_ENV)))
      const second = Context.get(other, ServerUrl)
      expect(second).not.toBe(first)

      const email = uniqueEmail("rl")
      const setup = authClient(first, { headers: { [HEADER]: "198.51.100.200" } }).client
      expect((yield* call(() => setup.signUp({ email, password: PASSWORD }))).error).toBeNull()

      // The client's address first, then the proxies' own: only the first value counts.
      const client = { [HEADER]: "203.0.113.1, 10.0.0.1" }
      const viaFirst = authClient(first, { headers: client }).client
      const viaSecond = authClient(second, { headers: { [HEADER]: "203.0.113.1, 10.0.0.2" } }).client
      for (let i = 0; i < TOKEN_BURST; i++) {
        const { error } = yield* call(() => (i % 2 === 0 ? viaFirst : viaSecond).signInWithPassword({ email, password: PASSWORD }))
        expect(error).toBeNull()
      }
      const before = yield* refusals("token_refresh")
      for (const url of [first, second]) expectLimited(yield* passwordGrant(url, email, client), 300)
      const { error } = yield* call(() => viaSecond.signInWithPassword({ email, password: PASSWORD }))
      expect([error?.status, error?.code]).toEqual([429, "over_request_rate_limit"])
      // Every grant draws on the one bucket, and is refused before any work (this token is not even well-formed).
      expectLimited(yield* raw(first, "/token?grant_type=refresh_token", { body: { refresh_token: "nope" }, headers: client, apiVersion: true }), 300)
      expect((yield* refusals("token_refresh")) - before).toBe(4)
      // A grant GoTrue does not know is refused as such, not counted.
      const unknown = yield* raw(second, "/token?grant_type=magic", { body: {}, headers: client, apiVersion: true })
      expect([unknown.status, unknown.json?.code]).toEqual([400, "invalid_credentials"])

      // Another address is another bucket; a request without the header is not limited at all.
      for (const url of [first, second]) {
        expect((yield* passwordGrant(url, email, { [HEADER]: "203.0.113.2" })).status).toBe(200)
        expect((yield* passwordGrant(url, email, {})).status).toBe(200)
      }
    }))
})

acceptance({
  AUTH_RATE_LIMIT_HEADER: HEADER,
  // 0 refuses every keyed request, so one request shows each route is limited, before it does anything.
  AUTH_RATE_LIMIT_OTP: "0",
  AUTH_RATE_LIMIT_VERIFY: "0",
  AUTH_RATE_LIMIT_ANONYMOUS_USERS: "0",
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  AUTH_MAILER_AUTOCONFIRM: "true"
})("every limited route", (it) => {
  it.effect("POST /magiclink, /otp, /recover, /resend, /signup, PUT /user, GET and POST /verify: 429 before any work", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("routes")
      // Unkeyed: not limited. A user to sign in, change and mail.
      const { client } = authClient(url)
      const { data } = yield* call(() => client.signUp({ email, password: PASSWORD }))
      const token = data.session!.access_token
      const mailed = (yield* mailTo(email)).length

      const keyed = { [HEADER]: "192.0.2.77" }
      const before = { otp: yield* refusals("otp"), verify: yield* refusals("verify"), anonymous: yield* refusals("anonymous_users") }
      const newcomer = uniqueEmail("never")
      const requests: ReadonlyArray<readonly [string, Parameters<typeof raw>[2]]> = [
        ["/magiclink", { body: { email } }],
        ["/otp", { body: { email } }],
        ["/recover", { body: { email } }],
        ["/resend", { body: { type: "signup", email } }],
        ["/signup", { body: { email: newcomer, password: PASSWORD } }],
        ["/signup", { body: {} }],
        ["/user", { method: "PUT", body: { data: { limited: true } }, bearer: token }],
        ["/verify?type=signup&token=whatever&redirect_to=http://localhost:3000", {}],
        ["/verify", { body: { type: "signup", token: "123456", email } }]
      ]
      for (const [path, options] of requests) {
        expectLimited(yield* raw(url, path, { ...options, headers: keyed, apiVersion: true }), 3600)
      }
      expect(yield* mailTo(email)).toHaveLength(mailed)
      expect(yield* mailTo(newcomer)).toEqual([])
      const { data: user } = yield* call(() => client.getUser(token))
      expect(user.user?.user_metadata["limited"]).toBeUndefined()
      expect({
        otp: (yield* refusals("otp")) - before.otp,
        verify: (yield* refusals("verify")) - before.verify,
        anonymous: (yield* refusals("anonymous_users")) - before.anonymous
      }).toEqual({ otp: 6, verify: 2, anonymous: 1 })

      // The same PUT /user without the header goes through.
      const unkeyed = yield* raw(url, "/user", { method: "PUT", body: { data: { limited: false } }, bearer: token, apiVersion: true })
      expect([unkeyed.status, unkeyed.json?.user_metadata?.limited]).toEqual([200, false])
    }))
})

acceptance({ AUTH_RATE_LIMIT_TOKEN_REFRESH: "0", AUTH_RATE_LIMIT_VERIFY: "0" })("without RATE_LIMIT_HEADER", (it) => {
  it.effect("nothing is limited, whatever the rates and whatever headers a client sends", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      for (let i = 0; i < TOKEN_BURST + 5; i++) {
        const refresh = yield* raw(url, "/token?grant_type=refresh_token", {
          body: { refresh_token: "nope" },
          headers: { [HEADER]: "203.0.113.3", "X-Real-IP": "203.0.113.3" },
          apiVersion: true
        })
        expect([refresh.status, refresh.json?.code]).toEqual([400, "validation_failed"])
      }
      const verify = yield* raw(url, "/verify", { body: { type: "signup", token: "123456", email: uniqueEmail("v") }, headers: { [HEADER]: "203.0.113.3" }, apiVersion: true })
      expect(verify.status).not.toBe(429)
    }))
})
