import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/**
 * The one error of the auth API: an HTTP status, a GoTrue error code (reference/gotrue-wire.md §3) and a
 * message safe to show a client. `reasons` is only used by `weak_password`; `retryAfter`, whole seconds, by the
 * 429s, whose clients are told when asking again can succeed; `oauth` marks GoTrue's OAuthError, whose body is
 * `{error, error_description}` (the id_token grant). The wire envelope is chosen per request by
 * ErrorEnvelope, not here.
 */
export class AuthError extends Schema.TaggedError<AuthError>()(
  "AuthError",
  {
    status: Schema.Int,
    code: Schema.String,
    message: Schema.String,
    reasons: Schema.optional(Schema.Array(Schema.String)),
    retryAfter: Schema.optional(Schema.Int),
    oauth: Schema.optional(Schema.Boolean)
  },
  HttpApiSchema.annotations({ status: 400, description: "GoTrue error envelope" })
) {
  static of(status: number, code: string, message: string): AuthError {
    return new AuthError({ status, code, message })
  }

  /** The same error telling the client to wait `seconds` (at least 1) before asking again. */
  withRetryAfter(seconds: number): AuthError {
    // Spelled out: an Error's message is not an own enumerable field, so a spread would drop it.
    return new AuthError({
      status: this.status,
      code: this.code,
      message: this.message,
      ...(this.reasons === undefined ? {} : { reasons: this.reasons }),
      retryAfter: Math.max(1, Math.ceil(seconds))
    })
  }

  /** GoTrue's OAuthError: always 400, `{error, error_description}`, no error code for the client to read. */
  static oauth(error: string, description: string): AuthError {
    return new AuthError({ status: 400, code: error, message: description, oauth: true })
  }

  static validation(message: string): AuthError {
    return new AuthError({ status: 400, code: "validation_failed", message })
  }

  /** The database cannot be reached: 503, so clients and load balancers retry elsewhere or later. */
  static databaseUnavailable(): AuthError {
    return new AuthError({ status: 503, code: "database_unavailable", message: "The database cannot be reached" })
  }

  static unexpected(): AuthError {
    return new AuthError({
      status: 500,
      code: "unexpected_failure",
      message: "Unexpected failure, please check server logs for more information"
    })
  }
}
