/**
 * SECURITY_CAPTCHA_* end to end: the real server, the real @supabase/auth-js client, and a local stand-in for
 * hCaptcha's (or Turnstile's) siteverify that reads the form body as the provider does.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Metric, Queue } from "effect"
import { AuthMetrics } from "../../../src/auth/metrics/AuthMetrics.js"
import type { CaptchaProvider } from "../../../src/platform/Captcha.js"
import { formatLogLine } from "../../../src/platform/Logging.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"
import { fakeCaptchaProvider } from "../../platform/FakeCaptchaProvider.js"
import { formFields, type RecordedRequest, startHttpStub } from "../../platform/LocalServers.js"
import { adminJwt, authClient, call, mailTo, PASSWORD, raw, signHs256, uniqueEmail } from "./AcceptanceKit.js"

const SECRET = "0x4AAAAAAA-captcha-site-secret"
const PASSING = "10000000-aaaa-bbbb-cccc-000000000001"
const HANGING = "token-the-provider-never-answers"

/** What the provider stand-in was asked, in order. */
class ProviderRequests extends Context.Tag("test/ProviderRequests")<ProviderRequests, Queue.Dequeue<RecordedRequest>>() {}

const logLines: Array<string> = []

const CaptureLogs = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.make((options) => void logLines.push(formatLogLine(options)))),
  Logger.minimumLogLevel(LogLevel.Warning)
)

/** A server with captcha on, verifying at a local stand-in for `provider` (started first: its URL is a setting). */
const captchaServer = (provider: CaptchaProvider) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const stub = yield* startHttpStub(fakeCaptchaProvider({ provider, secret: SECRET, passing: PASSING, hanging: HANGING }))
    return TestServer({
      AUTH_SECURITY_CAPTCHA_ENABLED: "true",
      AUTH_SECURITY_CAPTCHA_PROVIDER: provider,
      AUTH_SECURITY_CAPTCHA_SECRET: SECRET,
      AUTH_SECURITY_CAPTCHA_TIMEOUT: "1s",
      AUTH_SECURITY_CAPTCHA_VERIFY_URL: `${stub.baseUrl}/siteverify`,
      AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true"
    }).pipe(Layer.merge(Layer.succeed(ProviderRequests, stub.requests)))
  })).pipe(Layer.provide(CaptureLogs))

const options = { timeout: 120_000, excludeTestServices: true }

/** The stand-in's requests since the last call. */
const providerAsked = Effect.flatMap(ProviderRequests, (requests) => Effect.map(Queue.takeAll(requests), (taken) => [...taken]))

const rejectedCount = Effect.map(Metric.value(AuthMetrics.captchaRejected), (state) => state.count)

/** A confirmed user with PASSWORD, made through the admin API (which needs no captcha). */
const confirmedUser = (url: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail("captcha-user")
    const created = yield* raw(url, "/admin/users", { bearer: adminJwt(), body: { email, password: PASSWORD, email_confirm: true } })
    expect(created.status).toBe(200)
    return email
  })

const usersWithEmail = (url: string, email: string) =>
  Effect.map(raw(url, `/admin/users?filter=${encodeURIComponent(email)}`, { bearer: adminJwt() }), (response) =>
    (response.json.users as ReadonlyArray<{ email: string }>).filter((user) => user.email === email))

const disallowed = (detail: string) => ({
  name: "AuthApiError",
  status: 400,
  code: "captcha_failed",
  message: `captcha protection: request disallowed (${detail})`
})

layer(captchaServer("hcaptcha"), options)("captcha with hCaptcha, through @supabase/auth-js", (it) => {
  it.effect("signUp with a solved captcha creates the user; the provider got the secret, the token and the address", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      yield* providerAsked
      const email = uniqueEmail("captcha-signup")
      const { data, error } = yield* call(() =>
        authClient(url).client.signUp({ email, password: PASSWORD, options: { captchaToken: PASSING } }))

      expect(error).toBeNull()
      expect(data.user?.email).toBe(email)
      const [request, ...more] = yield* providerAsked
      expect(more).toStrictEqual([])
      expect(request!.method).toBe("POST")
      expect(request!.url).toBe("/siteverify")
      expect(formFields(request!.body)).toStrictEqual([["secret", SECRET], ["response", PASSING], ["remoteip", "127.0.0.1"]])
    }))

  it.effect("signUp with a refused or missing token fails with captcha_failed, before any user or mail exists", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("captcha-refused")
      yield* providerAsked

      const refused = yield* call(() => client.signUp({ email, password: PASSWORD, options: { captchaToken: "forged" } }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))
      expect(yield* providerAsked).toHaveLength(1)

      const missing = yield* call(() => client.signUp({ email, password: PASSWORD }))
      expect(missing.error).toMatchObject(disallowed("no captcha_token"))
      expect(yield* providerAsked).toStrictEqual([])

      expect(yield* usersWithEmail(url, email)).toStrictEqual([])
      expect(yield* mailTo(email)).toStrictEqual([])
    }))

  it.effect("an anonymous sign-in needs a captcha too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      expect((yield* call(() => client.signInAnonymously())).error).toMatchObject(disallowed("no captcha_token"))
      const { data, error } = yield* call(() => client.signInAnonymously({ options: { captchaToken: PASSING } }))
      expect(error).toBeNull()
      expect(data.user?.is_anonymous).toBe(true)
    }))

  it.effect("signInWithPassword needs a solved captcha; the refresh_token grant then needs none", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = yield* confirmedUser(url)
      const { client } = authClient(url)

      const refused = yield* call(() => client.signInWithPassword({ email, password: PASSWORD, options: { captchaToken: "forged" } }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))
      const missing = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
      expect(missing.error).toMatchObject(disallowed("no captcha_token"))
      expect(refused.data.session).toBeNull()

      const signedIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD, options: { captchaToken: PASSING } }))
      expect(signedIn.error).toBeNull()
      expect(signedIn.data.session?.refresh_token).toEqual(expect.any(String))
      yield* providerAsked

      const refreshed = yield* call(() => client.refreshSession())
      expect(refreshed.error).toBeNull()
      expect(refreshed.data.session?.refresh_token).not.toBe(signedIn.data.session?.refresh_token)
      expect(yield* providerAsked).toStrictEqual([])
    }))

  it.effect("a wrong password with a solved captcha is still a wrong password", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = yield* confirmedUser(url)
      const { error } = yield* call(() =>
        authClient(url).client.signInWithPassword({ email, password: `${PASSWORD}-not`, options: { captchaToken: PASSING } }))
      expect(error).toMatchObject({ status: 400, code: "invalid_credentials" })
    }))

  it.effect("signInWithOtp sends its mail only with a solved captcha", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("captcha-otp")

      const refused = yield* call(() => client.signInWithOtp({ email, options: { captchaToken: "forged" } }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))
      expect(yield* mailTo(email)).toStrictEqual([])
      expect(yield* usersWithEmail(url, email)).toStrictEqual([])

      const sent = yield* call(() => client.signInWithOtp({ email, options: { captchaToken: PASSING } }))
      expect(sent.error).toBeNull()
      expect(yield* mailTo(email)).toHaveLength(1)
    }))

  it.effect("resetPasswordForEmail sends its mail only with a solved captcha", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = yield* confirmedUser(url)
      const { client } = authClient(url)

      const missing = yield* call(() => client.resetPasswordForEmail(email))
      expect(missing.error).toMatchObject(disallowed("no captcha_token"))
      const refused = yield* call(() => client.resetPasswordForEmail(email, { captchaToken: "forged" }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))
      expect(yield* mailTo(email)).toStrictEqual([])

      const sent = yield* call(() => client.resetPasswordForEmail(email, { captchaToken: PASSING }))
      expect(sent.error).toBeNull()
      expect(yield* mailTo(email)).toHaveLength(1)
    }))

  it.effect("resend needs a solved captcha", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("captcha-resend")
      expect((yield* call(() => client.signUp({ email, password: PASSWORD, options: { captchaToken: PASSING } }))).error).toBeNull()

      const refused = yield* call(() => client.resend({ type: "signup", email, options: { captchaToken: "forged" } }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))
      expect(yield* mailTo(email)).toHaveLength(1)
    }))

  it.effect("the legacy /magiclink needs one; a top-level captcha_token is read too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("captcha-magiclink")
      const missing = yield* raw(url, "/magiclink", { body: { email }, apiVersion: true })
      expect(missing.status).toBe(400)
      expect(missing.json).toStrictEqual({ code: "captcha_failed", message: "captcha protection: request disallowed (no captcha_token)" })
      expect(missing.headers.get("x-sb-error-code")).toBe("captcha_failed")

      expect((yield* raw(url, "/magiclink", { body: { email, captcha_token: PASSING } })).status).toBe(200)
      expect((yield* raw(url, "/otp", { body: { email, captcha_token: "forged" } })).json).toStrictEqual({
        code: 400,
        error_code: "captcha_failed",
        msg: "captcha protection: request disallowed (invalid-input-response)"
      })
    }))

  it.effect("/token: pkce and id_token are exempt; an unknown grant is not", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      yield* providerAsked
      const pkce = yield* raw(url, "/token?grant_type=pkce", { body: { auth_code: "no-such-code", code_verifier: "v".repeat(43) } })
      expect(pkce.json?.error_code).not.toBe("captcha_failed")
      const idToken = yield* raw(url, "/token?grant_type=id_token", { body: { provider: "google", id_token: "not.a.jwt" } })
      expect(idToken.text).not.toContain("captcha")
      expect(yield* providerAsked).toStrictEqual([])

      const unknown = yield* raw(url, "/token?grant_type=web3", { body: {} })
      expect(unknown.json).toMatchObject({ error_code: "captcha_failed" })
      // A repeated grant_type is no grant: it cannot smuggle a password sign-in past the check.
      const repeated = yield* raw(url, "/token?grant_type=refresh_token&grant_type=password", { body: { email: "a@example.com", password: "x" } })
      expect(repeated.json).toMatchObject({ error_code: "captcha_failed" })
    }))

  it.effect("a service_role key skips the check; an anon key or a forged admin token does not", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      yield* providerAsked
      const admin = authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}` } }).client
      const email = uniqueEmail("captcha-admin")
      const signedUp = yield* call(() => admin.signUp({ email, password: PASSWORD }))
      expect(signedUp.error).toBeNull()
      expect(signedUp.data.user?.email).toBe(email)
      expect((yield* call(() => admin.resetPasswordForEmail(email))).error).toBeNull()
      expect(yield* providerAsked).toStrictEqual([])

      const anon = authClient(url, { headers: { Authorization: `Bearer ${adminJwt("anon")}` } }).client
      expect((yield* call(() => anon.signUp({ email: uniqueEmail("captcha-anon"), password: PASSWORD }))).error)
        .toMatchObject(disallowed("no captcha_token"))

      const forged = signHs256({ role: "service_role", exp: Math.floor(Date.now() / 1000) + 600 }, "some-other-secret-of-32-bytes-or-more")
      const forger = authClient(url, { headers: { Authorization: `Bearer ${forged}` } }).client
      expect((yield* call(() => forger.signUp({ email: uniqueEmail("captcha-forged"), password: PASSWORD }))).error)
        .toMatchObject(disallowed("no captcha_token"))
    }))

  it.effect("a provider that does not answer in time is a 503 captcha_failed, with no secret, and a warning in the log", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("captcha-hang")
      logLines.length = 0
      const response = yield* raw(url, "/signup", { body: { email, password: PASSWORD, gotrue_meta_security: { captcha_token: HANGING } } })
      expect(response.status).toBe(503)
      expect(response.json).toMatchObject({
        code: 503,
        error_code: "captcha_failed",
        msg: "captcha protection: verification unavailable (the captcha provider did not answer in time)"
      })
      expect(yield* usersWithEmail(url, email)).toStrictEqual([])

      const { error } = yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD, options: { captchaToken: HANGING } }))
      expect(error).toMatchObject({ name: "AuthRetryableFetchError", status: 503 })

      const warnings = logLines.filter((line) => line.includes("captcha verification unavailable"))
      expect(warnings.length).toBeGreaterThanOrEqual(2)
      expect(warnings[0]).toContain("no answer within 1s")
      for (const line of logLines) expect(line).not.toContain(SECRET)
      expect(response.text).not.toContain(SECRET)
    }))

  it.effect("a broken body is still GoTrue's bad_json, not a captcha failure", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* raw(url, "/signup", { body: `{"email": "x@example.com", "gotrue_meta_security": {` })
      expect(response.status).toBe(400)
      expect(response.json).toMatchObject({ error_code: "bad_json" })
    }))

  it.effect("each refused request is counted once in auth.captcha_rejected_requests; a passed one is not", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const before = yield* rejectedCount
      yield* call(() => client.signInWithOtp({ email: uniqueEmail("captcha-count"), options: { captchaToken: "forged" } }))
      yield* call(() => client.signInWithOtp({ email: uniqueEmail("captcha-count") }))
      expect((yield* rejectedCount) - before).toBe(2)
      yield* call(() => client.signInWithOtp({ email: uniqueEmail("captcha-count"), options: { captchaToken: PASSING } }))
      expect((yield* rejectedCount) - before).toBe(2)
    }))
})

layer(captchaServer("turnstile"), options)("captcha with Turnstile, through @supabase/auth-js", (it) => {
  it.effect("signUp passes with a solved token and is refused with Turnstile's codes otherwise", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      yield* providerAsked

      const refused = yield* call(() => client.signUp({ email: uniqueEmail("turnstile"), password: PASSWORD, options: { captchaToken: "forged" } }))
      expect(refused.error).toMatchObject(disallowed("invalid-input-response"))

      const email = uniqueEmail("turnstile")
      const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD, options: { captchaToken: PASSING } }))
      expect(error).toBeNull()
      expect(data.user?.email).toBe(email)
      const asked = yield* providerAsked
      expect(asked.map((request) => new Map(formFields(request.body)).get("response"))).toStrictEqual(["forged", PASSING])
      for (const request of asked) expect(new Map(formFields(request.body)).get("secret")).toBe(SECRET)
    }))
})
