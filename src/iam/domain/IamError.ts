import * as Schema from "effect/Schema"

/** The IAM error codes: gRPC status names in Connect's snake_case spelling, so REST and Connect bodies agree. */
export const IamCode = Schema.Literal(
  "invalid_argument",
  "unauthenticated",
  "permission_denied",
  "not_found",
  "already_exists",
  "failed_precondition",
  "resource_exhausted",
  "unavailable",
  "internal"
)
export type IamCode = typeof IamCode.Type

/**
 * The one failure every IAM operation can end in. The message is written for the client: it never carries a
 * token, a hash or a password, and never says which of username or password was wrong.
 */
export class IamError extends Schema.TaggedError<IamError>()("IamError", {
  code: IamCode,
  message: Schema.String,
  /** Whole seconds until trying again can succeed: REST's Retry-After, gRPC's and Connect's `retry-after` metadata. */
  retryAfter: Schema.optional(Schema.Int)
}) {
  static invalid(message: string): IamError {
    return new IamError({ code: "invalid_argument", message })
  }
  static unauthenticated(message = "authentication required"): IamError {
    return new IamError({ code: "unauthenticated", message })
  }
  static denied(message = "permission denied"): IamError {
    return new IamError({ code: "permission_denied", message })
  }
  static notFound(message: string): IamError {
    return new IamError({ code: "not_found", message })
  }
  static exists(message: string): IamError {
    return new IamError({ code: "already_exists", message })
  }
  /** The state forbids it, not the caller: it would succeed once the state changes (another admin exists). */
  static precondition(message: string): IamError {
    return new IamError({ code: "failed_precondition", message })
  }
  /** Refused until `retryAfterMs` has passed; the hint is in whole seconds, rounded up, at least one. */
  static exhausted(message: string, retryAfterMs: number): IamError {
    return new IamError({ code: "resource_exhausted", message, retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)) })
  }
  static unavailable(): IamError {
    return new IamError({ code: "unavailable", message: "service temporarily unavailable" })
  }
  static internal(): IamError {
    return new IamError({ code: "internal", message: "internal error" })
  }
}
