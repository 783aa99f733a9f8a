import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * The one error of the auth API: an HTTP status, a GoTrue error code (reference/gotrue-wire.md §3) and a
 * message safe to show a client. `reasons` is only used by `weak_password`. The wire envelope is chosen per
 * request by ErrorEnvelope, not here.
 */
export class AuthError extends Schema.TaggedError<AuthError>()(
  "AuthError",
  {
    status: Schema.Int,
    code: Schema.String,
    message: Schema.String,
    reasons: Schema.optional(Schema.Array(Schema.String))
  },
  HttpApiSchema.annotations({ status: 400, description: "GoTrue error envelope" })
) {
  static of(status: number, code: string, message: string): AuthError {
    return new AuthError({ status, code, message })
  }

  static validation(message: string): AuthError {
    return new AuthError({ status: 400, code: "validation_failed", message })
  }

  static unexpected(): AuthError {
    return new AuthError({
      status: 500,
      code: "unexpected_failure",
      message: "Unexpected failure, please check server logs for more information"
    })
  }
}
