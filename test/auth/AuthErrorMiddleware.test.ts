import { HttpApiError, HttpServerError, HttpServerRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Either, FastCheck, FiberId, Schema } from "effect"
import { AuthError } from "../../src/auth/domain/AuthError.js"
import { toAuthError } from "../../src/auth/http/AuthErrorMiddleware.js"
import { RequestBodyError } from "../../src/platform/http/RequestBody.js"

const request = HttpServerRequest.fromWeb(new Request("http://x/y"))

const SignUp = Schema.Struct({
  email: Schema.String,
  password: Schema.String.pipe(Schema.minLength(6), Schema.maxLength(72))
})

/** The HttpApiDecodeError the contract produces when SignUp rejects `input`. */
const decodeErrorFor = (input: unknown, options?: { readonly excess: boolean }): HttpApiError.HttpApiDecodeError => {
  const result = Schema.decodeUnknownEither(SignUp)(input, options?.excess ? { onExcessProperty: "error" } : {})
  if (Either.isRight(result)) throw new Error(`expected ${JSON.stringify(input)} to be rejected`)
  return Effect.runSync(HttpApiError.HttpApiDecodeError.fromParseError(result.left))
}

const invalidPasswordMessage = "Invalid request: \"password\" has an invalid value"

describe("toAuthError", () => {
  it("passes an AuthError through unchanged, as a failure or a defect", () => {
    const error = AuthError.of(422, "email_exists", "Email address already registered")

    expect(toAuthError(Cause.fail(error))).toBe(error)
    expect(toAuthError(Cause.die(error))).toBe(error)
  })

  it("turns a schema failure into 400 validation_failed naming the field", () => {
    const error = toAuthError(Cause.fail(decodeErrorFor({ email: "a@example.com", password: "short" })))

    expect(error).toMatchObject({ status: 400, code: "validation_failed", message: invalidPasswordMessage })
    expect(error.message).not.toContain("short")
  })

  it("says which field is missing and which is not allowed", () => {
    expect(toAuthError(Cause.fail(decodeErrorFor({ password: "long enough" }))).message).toBe(
      "Invalid request: \"email\" is required"
    )
    expect(
      toAuthError(
        Cause.fail(decodeErrorFor({ email: "a@example.com", password: "long enough", admin: true }, { excess: true }))
      ).message
    ).toBe("Invalid request: \"admin\" is not allowed")
  })

  it.prop(
    "never echoes a rejected password, whatever it is",
    {
      password: FastCheck.string({ maxLength: 120, unit: "binary" }).filter((s) => s.length < 6 || s.length > 72)
    },
    ({ password }) => {
      const error = toAuthError(Cause.fail(decodeErrorFor({ email: "a@example.com", password })))

      expect(error).toMatchObject({ status: 400, code: "validation_failed", message: invalidPasswordMessage })
      // Only a value that happens to be part of the fixed message can be "found" in it.
      if (!invalidPasswordMessage.includes(password)) expect(error.message).not.toContain(password)
    }
  )

  it.prop(
    "never echoes a password of the wrong type either",
    { password: FastCheck.oneof(FastCheck.integer(), FastCheck.boolean(), FastCheck.array(FastCheck.string())) },
    ({ password }) => {
      const error = toAuthError(Cause.fail(decodeErrorFor({ email: "a@example.com", password })))

      expect(error).toMatchObject({ status: 400, code: "validation_failed", message: invalidPasswordMessage })
    }
  )

  it("turns a body that is not JSON into 400 bad_json without the parser's text", () => {
    const cause = new SyntaxError("Unexpected token 's', \"secret-password-123\" is not valid JSON")
    for (const wrap of [Cause.die, Cause.fail]) {
      const error = toAuthError(wrap(new HttpServerError.RequestError({ request, reason: "Decode", cause })))

      expect(error).toMatchObject({ status: 400, code: "bad_json", message: "Could not parse request body as JSON" })
      expect(JSON.stringify(error)).not.toContain("secret-password-123")
    }
  })

  it("turns an oversized body into 413 request_entity_too_large", () => {
    const error = toAuthError(
      Cause.die(new HttpServerError.RequestError({ request, reason: "Decode", cause: new Error("maxBytes exceeded") }))
    )

    expect(error).toMatchObject({
      status: 413,
      code: "request_entity_too_large",
      message: "Request entity too large"
    })
  })

  it("maps the bounded body reader's refusals: too large is a 413, too deep or not JSON a 400 bad_json", () => {
    const refused = (reason: RequestBodyError["reason"]) =>
      toAuthError(Cause.die(new HttpServerError.RequestError({ request, reason: "Decode", cause: new RequestBodyError({ reason }) })))

    expect(refused("TooLarge")).toMatchObject({ status: 413, code: "request_entity_too_large" })
    for (const reason of ["TooDeep", "NotJson", "Unreadable"] as const) {
      expect(refused(reason)).toMatchObject({ status: 400, code: "bad_json", message: "Could not parse request body as JSON" })
    }
  })

  it("turns RouteNotFound into 404 not_found", () => {
    expect(toAuthError(Cause.die(new HttpServerError.RouteNotFound({ request })))).toMatchObject({
      status: 404,
      code: "not_found"
    })
  })

  it("turns any other defect or failure into 500 unexpected_failure without its text", () => {
    const others = [
      Cause.die(new Error("connection to postgres://user:pw@db failed")),
      Cause.die("a string defect"),
      Cause.fail({ some: "object" }),
      Cause.die(new HttpServerError.RequestError({ request, reason: "Transport", cause: new Error("socket hang up") })),
      Cause.interrupt(FiberId.none)
    ]
    for (const cause of others) {
      const error = toAuthError(cause)

      expect(error).toStrictEqual(AuthError.unexpected())
      expect(error.message).not.toContain("postgres")
    }
  })
})
