import type { SqlError } from "@effect/sql/SqlError"

/**
 * What a failed statement means, read from the driver's error (pg and PGlite both put the SQLSTATE in `code`).
 * Each product maps these onto its own errors; the reading is shared so both agree on it.
 */

/** The SQLSTATE (or, for socket failures, the errno name) behind a SqlError, when the driver gave one. */
export const sqlState = (error: unknown): string | undefined => {
  const cause = typeof error === "object" && error !== null && "cause" in error ? (error as { cause?: unknown }).cause : undefined
  const code = (cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/** The constraint a violation names (PostgreSQL reports it; PGlite does too). */
export const constraintOf = (error: SqlError): string =>
  String((error.cause as { constraint?: unknown } | undefined)?.constraint ?? "")

/** 23505: a row with this key already exists (two writers raced for one address, name, …). */
export const isUniqueViolation = (error: unknown): boolean => sqlState(error) === "23505"

/** 23503: the row refers to one that does not exist. */
export const isForeignKeyViolation = (error: unknown): boolean => sqlState(error) === "23503"

// SQLSTATE classes that mean "the database is not there right now", and the driver's socket errors.
const UNAVAILABLE_STATES = /^(08|53|57P)/
const UNAVAILABLE_ERRNO = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND"])

// What pg says, without a code, when a connection dies under a query or the pool cannot open one in time.
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/

/** The database cannot be reached or is shutting down: the request may be retried, it is not a bug. */
export const isUnavailable = (error: unknown): boolean => {
  if ((error as { _tag?: unknown } | null)?._tag !== "SqlError") return false
  const state = sqlState(error)
  if (state !== undefined) return UNAVAILABLE_STATES.test(state) || UNAVAILABLE_ERRNO.has(state)
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error && UNAVAILABLE_MESSAGES.test(cause.message)
}
