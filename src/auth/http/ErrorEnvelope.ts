import type { AuthError } from "../domain/AuthError.js"

export const API_VERSION_HEADER = "x-supabase-api-version"
export const ERROR_CODE_HEADER = "x-sb-error-code"
export const RETRY_AFTER_HEADER = "retry-after"

/** The first API version whose errors carry a string `code`; auth-js sends it on every request. */
export const API_VERSION_2024_01_01 = "2024-01-01"

export interface RenderedError {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Readonly<Record<string, unknown>>
}

/**
 * The API version a request asked for: 2024-01-01 when its X-Supabase-Api-Version header is a date on or after
 * that day, otherwise none (the legacy envelope). Dates compare as strings once their shape is checked.
 */
export const requestedApiVersion = (header: string | undefined): string | undefined => {
  const value = header?.trim() ?? ""
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) return undefined
  return value >= API_VERSION_2024_01_01 ? API_VERSION_2024_01_01 : undefined
}

/**
 * GoTrue's error body for a request: `{code, message}` for API version 2024-01-01 and later, the legacy
 * `{code: status, error_code, msg}` otherwise. Both set `x-sb-error-code`; `weak_password` also carries its
 * reasons. A 5xx in the legacy envelope carries the request id so an operator can find the log line. A 429 always
 * says in Retry-After how many whole seconds to wait (GoTrue sends none, so a client could only guess); one second
 * when the error did not know. An OAuth-style error (AuthError.oauth) is `{error, error_description}` instead.
 */
export const renderError = (
  error: Pick<AuthError, "status" | "code" | "message" | "reasons" | "retryAfter" | "oauth">,
  request: { readonly apiVersionHeader: string | undefined; readonly requestId: string }
): RenderedError => {
  // GoTrue writes an OAuthError as it is, in every API version and without the error-code header.
  if (error.oauth === true) return { status: error.status, headers: {}, body: { error: error.code, error_description: error.message } }
  const code = error.code !== "" ? error.code : error.status >= 500 ? "unexpected_failure" : "unknown"
  const weakPassword = code === "weak_password" ? { weak_password: { reasons: error.reasons ?? [] } } : {}
  const version = requestedApiVersion(request.apiVersionHeader)
  const retryAfter = error.status === 429 ? { [RETRY_AFTER_HEADER]: String(Math.max(1, Math.ceil(error.retryAfter ?? 1))) } : {}
  if (version !== undefined) {
    return {
      status: error.status,
      headers: { [ERROR_CODE_HEADER]: code, [API_VERSION_HEADER]: version, ...retryAfter },
      body: { code, message: error.message, ...weakPassword }
    }
  }
  return {
    status: error.status,
    headers: { [ERROR_CODE_HEADER]: code, ...retryAfter },
    body: {
      code: error.status,
      error_code: code,
      msg: error.message,
      ...(error.status >= 500 ? { error_id: request.requestId } : {}),
      ...weakPassword
    }
  }
}
