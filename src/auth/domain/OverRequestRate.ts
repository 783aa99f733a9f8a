import { AuthError } from "./AuthError.js"

/** GoTrue's answer past a per-IP limit, with the whole seconds until a request would pass. */
export const overRequestRate = (retryAfterMs: number): AuthError =>
  AuthError.of(429, "over_request_rate_limit", "Request rate limit reached").withRetryAfter(retryAfterMs / 1000)
