import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { AuthError } from "../../src/auth/domain/AuthError.js"
import {
  API_VERSION_2024_01_01,
  API_VERSION_HEADER,
  ERROR_CODE_HEADER,
  renderError,
  RETRY_AFTER_HEADER,
  requestedApiVersion
} from "../../src/auth/http/ErrorEnvelope.js"

const legacy = { apiVersionHeader: undefined, requestId: "req-123" }
const versioned = { apiVersionHeader: "2024-01-01", requestId: "req-123" }

describe("renderError", () => {
  it("writes the legacy body {code: status, error_code, msg} without an error id below 500", () => {
    const rendered = renderError(AuthError.of(422, "email_exists", "Email address already registered"), legacy)

    expect(rendered).toStrictEqual({
      status: 422,
      headers: { [ERROR_CODE_HEADER]: "email_exists" },
      body: { code: 422, error_code: "email_exists", msg: "Email address already registered" }
    })
  })

  it("writes an OAuth-style error as {error, error_description}, 400, in every version and without the code header", () => {
    for (const request of [legacy, versioned]) {
      expect(renderError(AuthError.oauth("invalid request", "Bad ID token"), request)).toStrictEqual({
        status: 400,
        headers: {},
        body: { error: "invalid request", error_description: "Bad ID token" }
      })
    }
  })

  it("adds the request id as error_id to a legacy 5xx", () => {
    const rendered = renderError(AuthError.unexpected(), legacy)

    expect(rendered.status).toBe(500)
    expect(rendered.headers).toStrictEqual({ [ERROR_CODE_HEADER]: "unexpected_failure" })
    expect(rendered.body).toStrictEqual({
      code: 500,
      error_code: "unexpected_failure",
      msg: "Unexpected failure, please check server logs for more information",
      error_id: "req-123"
    })
  })

  it("writes {code, message} and echoes the version for 2024-01-01", () => {
    const rendered = renderError(AuthError.of(400, "validation_failed", "Invalid request"), versioned)

    expect(rendered).toStrictEqual({
      status: 400,
      headers: { [ERROR_CODE_HEADER]: "validation_failed", [API_VERSION_HEADER]: API_VERSION_2024_01_01 },
      body: { code: "validation_failed", message: "Invalid request" }
    })
  })

  it("echoes 2024-01-01 for a later date and never adds an error id to the new body", () => {
    const rendered = renderError(AuthError.unexpected(), { apiVersionHeader: "2025-06-30", requestId: "req-9" })

    expect(rendered.headers[API_VERSION_HEADER]).toBe(API_VERSION_2024_01_01)
    expect(rendered.body).toStrictEqual({
      code: "unexpected_failure",
      message: "Unexpected failure, please check server logs for more information"
    })
  })

  it("carries weak_password.reasons in both envelopes", () => {
    const error = new AuthError({
      status: 422,
      code: "weak_password",
      message: "Password is too weak",
      reasons: ["length", "characters"]
    })

    expect(renderError(error, legacy).body).toStrictEqual({
      code: 422,
      error_code: "weak_password",
      msg: "Password is too weak",
      weak_password: { reasons: ["length", "characters"] }
    })
    expect(renderError(error, versioned).body).toStrictEqual({
      code: "weak_password",
      message: "Password is too weak",
      weak_password: { reasons: ["length", "characters"] }
    })
  })

  it("gives weak_password an empty reasons list when it has none", () => {
    const error = AuthError.of(422, "weak_password", "Password is too weak")

    expect(renderError(error, legacy).body["weak_password"]).toStrictEqual({ reasons: [] })
    expect(renderError(error, versioned).body["weak_password"]).toStrictEqual({ reasons: [] })
  })

  it("never adds weak_password to another code, even with reasons", () => {
    const error = new AuthError({ status: 400, code: "validation_failed", message: "m", reasons: ["length"] })

    expect(renderError(error, legacy).body).not.toHaveProperty("weak_password")
    expect(renderError(error, versioned).body).not.toHaveProperty("weak_password")
  })

  it("names an empty code unexpected_failure on a 500 and unknown otherwise, in both envelopes", () => {
    const server = AuthError.of(500, "", "boom")
    const client = AuthError.of(400, "", "bad")

    expect(renderError(server, legacy).headers[ERROR_CODE_HEADER]).toBe("unexpected_failure")
    expect(renderError(server, legacy).body["error_code"]).toBe("unexpected_failure")
    expect(renderError(server, versioned).body["code"]).toBe("unexpected_failure")
    expect(renderError(client, legacy).headers[ERROR_CODE_HEADER]).toBe("unknown")
    expect(renderError(client, legacy).body["error_code"]).toBe("unknown")
    expect(renderError(client, versioned).headers[ERROR_CODE_HEADER]).toBe("unknown")
    expect(renderError(client, versioned).body["code"]).toBe("unknown")
  })

  it("gives a 429 its Retry-After in whole seconds, in both envelopes, and no other status one", () => {
    const limited = AuthError.of(429, "over_email_send_rate_limit", "Email rate limit exceeded").withRetryAfter(41.2)

    expect(renderError(limited, legacy).headers).toStrictEqual({ [ERROR_CODE_HEADER]: "over_email_send_rate_limit", [RETRY_AFTER_HEADER]: "42" })
    expect(renderError(limited, versioned).headers).toStrictEqual({
      [ERROR_CODE_HEADER]: "over_email_send_rate_limit",
      [API_VERSION_HEADER]: API_VERSION_2024_01_01,
      [RETRY_AFTER_HEADER]: "42"
    })
    expect(renderError(limited, versioned).body).toStrictEqual({ code: "over_email_send_rate_limit", message: "Email rate limit exceeded" })
    expect(renderError(AuthError.of(400, "validation_failed", "m").withRetryAfter(5), legacy).headers).not.toHaveProperty(RETRY_AFTER_HEADER)
  })

  it.prop(
    "every 429 carries a Retry-After of at least one whole second, whether or not the error knew the wait",
    {
      seconds: FastCheck.option(FastCheck.integer({ min: 0, max: 1_000_000 }), { nil: undefined }),
      header: FastCheck.option(FastCheck.constant("2024-01-01"), { nil: undefined })
    },
    ({ header, seconds }) => {
      const error = new AuthError({ status: 429, code: "over_request_rate_limit", message: "m", ...(seconds === undefined ? {} : { retryAfter: seconds }) })
      const value = renderError(error, { apiVersionHeader: header, requestId: "r" }).headers[RETRY_AFTER_HEADER]

      expect(value).toMatch(/^[1-9]\d*$/)
      if (seconds !== undefined && seconds >= 1) expect(Number(value)).toBe(seconds)
    }
  )

  it.prop(
    "sets x-sb-error-code to the body's code in both envelopes",
    {
      status: FastCheck.integer({ min: 400, max: 599 }),
      code: FastCheck.stringMatching(/^[a-z_]{1,30}$/),
      header: FastCheck.option(FastCheck.constantFrom("2024-01-01", "2023-12-31", "bogus"), { nil: undefined })
    },
    ({ code, header, status }) => {
      const rendered = renderError(AuthError.of(status, code, "msg"), { apiVersionHeader: header, requestId: "r" })
      const bodyCode = "error_code" in rendered.body ? rendered.body["error_code"] : rendered.body["code"]

      expect(rendered.status).toBe(status)
      expect(rendered.headers[ERROR_CODE_HEADER]).toBe(code)
      expect(bodyCode).toBe(code)
    }
  )
})

const day = FastCheck.date({
  min: new Date("0001-01-01T00:00:00Z"),
  max: new Date("9999-12-31T00:00:00Z"),
  noInvalidDate: true
}).map((date) => date.toISOString().slice(0, 10))

describe("requestedApiVersion", () => {
  it.prop("is 2024-01-01 exactly for valid dates on or after 2024-01-01", { date: day }, ({ date }) => {
    expect(requestedApiVersion(date)).toBe(date >= "2024-01-01" ? API_VERSION_2024_01_01 : undefined)
  })

  it.prop(
    "decides by the date, around the boundary",
    {
      date: FastCheck.date({
        min: new Date("2023-06-01T00:00:00Z"),
        max: new Date("2024-06-01T00:00:00Z"),
        noInvalidDate: true
      })
    },
    ({ date }) => {
      const value = date.toISOString().slice(0, 10)
      const onOrAfter = date.getTime() >= Date.UTC(2024, 0, 1)
      expect(requestedApiVersion(value)).toBe(onOrAfter ? API_VERSION_2024_01_01 : undefined)
    }
  )

  it("treats the boundary days as expected", () => {
    expect(requestedApiVersion("2023-12-31")).toBeUndefined()
    expect(requestedApiVersion("2024-01-01")).toBe(API_VERSION_2024_01_01)
    expect(requestedApiVersion("2024-01-02")).toBe(API_VERSION_2024_01_01)
  })

  it("falls back to the legacy envelope for a missing or malformed header", () => {
    for (const header of [undefined, "", "2024-1-1", "garbage", "2024-13-45", "2024-01-01T00:00:00Z", "20240101"]) {
      expect(requestedApiVersion(header)).toBeUndefined()
    }
    expect(renderError(AuthError.of(400, "bad_json", "x"), { apiVersionHeader: "2024-13-45", requestId: "r" }).body)
      .toStrictEqual({ code: 400, error_code: "bad_json", msg: "x" })
  })

  it.prop(
    "never picks a version for a header that is not shaped YYYY-MM-DD",
    { header: FastCheck.string().filter((s) => !/^\s*\d{4}-\d{2}-\d{2}\s*$/.test(s)) },
    ({ header }) => {
      expect(requestedApiVersion(header)).toBeUndefined()
    }
  )
})
