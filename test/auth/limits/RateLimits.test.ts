import { HttpServerRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Layer, Logger, Metric, Ref, TestClock } from "effect"
import type { AuthError } from "../../../src/auth/domain/AuthError.js"
import { rateLimitTask } from "../../../src/auth/limits/ExpiredRateLimits.js"
import { RateLimits } from "../../../src/auth/limits/RateLimits.js"
import { RateLimitsRepo } from "../../../src/auth/limits/RateLimitsRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { AuthMetrics } from "../../../src/auth/metrics/AuthMetrics.js"
import { testConfig } from "../../support/TestServer.js"

/**
 * RateLimits over the in-memory repo, on the test clock: which routes share a bucket, when nothing is limited,
 * what a refusal says and counts, and that old buckets are swept. The SQL itself is RateLimitsRepo's test; the
 * wire, with two servers, is the acceptance test.
 */

/** A RateLimits and its repo, built in the test's scope. */
const build = (env: Record<string, string>) =>
  Effect.map(
    Layer.build(RateLimits.DefaultWithoutDependencies.pipe(
      Layer.provideMerge(RateLimitsRepo.Test),
      Layer.provide(configLayer(testConfig(env)))
    )),
    (context) => ({ limits: Context.get(context, RateLimits), repo: Context.get(context, RateLimitsRepo) })
  )

const requestFrom = (headers: Record<string, string>) =>
  HttpServerRequest.fromWeb(new Request("http://auth.test/token", { method: "POST", headers }))

const as = (headers: Record<string, string>) => Effect.provideService(HttpServerRequest.HttpServerRequest, requestFrom(headers))

/** What `n` calls of `check` came to: "ok" for a pass, the error code otherwise. */
const outcomes = (n: number, check: Effect.Effect<void, AuthError, HttpServerRequest.HttpServerRequest>, headers: Record<string, string>) =>
  Effect.forEach(Array.from({ length: n }), () =>
    check.pipe(
      Effect.as("ok"),
      Effect.catchAll((error) => Effect.succeed(error.code)),
      as(headers)
    ))

const refusals = (limit: string) => Effect.map(Metric.value(Metric.tagged(AuthMetrics.rateLimited, "limit", limit)), (state) => state.count)

const HEADER = { AUTH_RATE_LIMIT_HEADER: "X-Real-IP" }

describe("RateLimits", () => {
  it.scoped("refuses past the burst with 429 over_request_rate_limit and the seconds to wait, and counts it", () =>
    Effect.gen(function*() {
      const { limits } = yield* build({ ...HEADER, AUTH_RATE_LIMIT_TOKEN_REFRESH: "6" })
      const before = yield* refusals("token_refresh")
      const client = { "x-real-ip": "198.51.100.1" }
      expect(yield* outcomes(30, limits.check("token"), client)).toStrictEqual(Array.from({ length: 30 }, () => "ok"))
      const refused = yield* Effect.flip(as(client)(limits.check("token")))
      expect([refused.status, refused.code, refused.message]).toStrictEqual([429, "over_request_rate_limit", "Request rate limit reached"])
      // 6 per 5 minutes: one every 50 seconds.
      expect(refused.retryAfter).toBe(50)
      expect((yield* refusals("token_refresh")) - before).toBe(1)
      yield* TestClock.adjust("49 seconds")
      expect(yield* outcomes(1, limits.check("token"), client)).toStrictEqual(["over_request_rate_limit"])
      yield* TestClock.adjust("1 second")
      expect(yield* outcomes(2, limits.check("token"), client)).toStrictEqual(["ok", "over_request_rate_limit"])
    }))

  it.scoped("keys on the first value of the configured header, whatever its case; each value and route its own bucket", () =>
    Effect.gen(function*() {
      const { limits } = yield* build({ GOTRUE_RATE_LIMIT_HEADER: "X-Forwarded-For", AUTH_RATE_LIMIT_OTP: "1" })
      const viaProxies = { "x-forwarded-for": "203.0.113.9, 10.0.0.1" }
      expect(yield* outcomes(31, limits.check("recover"), viaProxies)).toContain("over_request_rate_limit")
      // The same client behind another proxy hop, in the same bucket.
      expect(yield* outcomes(1, limits.check("recover"), { "x-forwarded-for": "203.0.113.9, 10.9.9.9" }))
        .toStrictEqual(["over_request_rate_limit"])
      expect(yield* outcomes(1, limits.check("recover"), { "x-forwarded-for": "203.0.113.10" })).toStrictEqual(["ok"])
      // Routes that share RATE_LIMIT_OTP still count apart, as GoTrue's limiters do.
      for (const route of ["magiclink", "otp", "resend", "signup", "user"] as const) {
        expect(yield* outcomes(1, limits.check(route), viaProxies)).toStrictEqual(["ok"])
      }
    }))

  it.scoped("limits nothing without RATE_LIMIT_HEADER, and never touches the table", () =>
    Effect.gen(function*() {
      const { limits, repo } = yield* build({ AUTH_RATE_LIMIT_TOKEN_REFRESH: "0" })
      expect(yield* outcomes(50, limits.check("token"), { "x-real-ip": "198.51.100.2" })).not.toContain("over_request_rate_limit")
      expect(yield* repo.sweep(Number.MAX_SAFE_INTEGER, 1_000_000)).toBe(0)
    }))

  it.scoped("lets a request without the header's value through, with GoTrue's warning naming the header", () =>
    Effect.gen(function*() {
      const lines = yield* Ref.make<ReadonlyArray<string>>([])
      const capture = Logger.replace(Logger.defaultLogger, Logger.make((options) => {
        Effect.runSync(Ref.update(lines, (all) => [...all, `${String(options.message)} ${JSON.stringify([...options.annotations])}`]))
      }))
      const { limits } = yield* build({ ...HEADER, AUTH_RATE_LIMIT_VERIFY: "0" })
      expect(yield* outcomes(1, limits.check("verify"), { "x-real-ip": "198.51.100.3" })).toStrictEqual(["over_request_rate_limit"])
      const unkeyed = yield* outcomes(3, limits.check("verify"), { "x-forwarded-for": "198.51.100.3" }).pipe(Effect.provide(capture))
      expect(unkeyed).toStrictEqual(["ok", "ok", "ok"])
      expect(yield* outcomes(1, limits.check("verify"), { "x-real-ip": " , 198.51.100.3" }).pipe(Effect.provide(capture))).toStrictEqual(["ok"])
      const logged = yield* Ref.get(lines)
      expect(logged).toHaveLength(4)
      for (const line of logged) {
        expect(line).toContain("request does not have a value for the rate limiting header, rate limiting is not applied")
        expect(line).toContain("x-real-ip")
      }
    }))

  it.scoped("POST /signup: with an email or phone the OTP bucket; without, the anonymous one, unless anonymous sign-in is off", () =>
    Effect.gen(function*() {
      const client = { "x-real-ip": "198.51.100.4" }
      const on = yield* build({ ...HEADER, AUTH_RATE_LIMIT_OTP: "0", AUTH_RATE_LIMIT_ANONYMOUS_USERS: "2", AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true" })
      const before = yield* refusals("anonymous_users")
      expect(yield* outcomes(1, on.limits.checkSignup({ email: "a@example.com" }), client)).toStrictEqual(["over_request_rate_limit"])
      expect(yield* outcomes(1, on.limits.checkSignup({ phone: "+15550001111", email: "" }), client)).toStrictEqual(["over_request_rate_limit"])
      expect(yield* outcomes(3, on.limits.checkSignup({ email: "", phone: null }), client)).toStrictEqual(["ok", "ok", "over_request_rate_limit"])
      expect((yield* refusals("anonymous_users")) - before).toBe(1)

      const off = yield* build({ ...HEADER, AUTH_RATE_LIMIT_ANONYMOUS_USERS: "0" })
      // Signup refuses these with anonymous_provider_disabled; GoTrue does not count them first.
      expect(yield* outcomes(3, off.limits.checkSignup({}), client)).toStrictEqual(["ok", "ok", "ok"])
    }))

  it.scoped("housekeeping sweeps, once a minute, the buckets that refilled more than a minute before", () =>
    Effect.gen(function*() {
      // One request every 10 seconds: a first request leaves a bucket that is full again 10 s later.
      const { limits, repo } = yield* build({ ...HEADER, AUTH_RATE_LIMIT_VERIFY: "30" })
      const task = rateLimitTask(repo)
      expect(Duration.toMillis(task.every)).toBe(60_000)
      expect(yield* outcomes(1, limits.check("verify"), { "x-real-ip": "198.51.100.5" })).toStrictEqual(["ok"])
      yield* TestClock.adjust("55 seconds")
      expect(yield* outcomes(1, limits.check("verify"), { "x-real-ip": "198.51.100.6" })).toStrictEqual(["ok"])
      // A pass at 120 s takes the buckets refilled by 60 s: the first (full at 10 s) goes, the second (full at 65 s)
      // is left for the next one.
      yield* TestClock.adjust("65 seconds")
      expect(yield* task.batch(new Date(yield* Clock.currentTimeMillis), null)).toEqual({ deleted: 1, done: true, resumeAfter: null })
      expect(yield* repo.sweep(Number.MAX_SAFE_INTEGER, 1_000_000)).toBe(1)
    }))
})
