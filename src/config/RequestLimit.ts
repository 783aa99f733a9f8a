import type * as Duration from "effect/Duration"

/**
 * A per-client request limit as GoTrue's tollbooth limiters count it: a bucket of `burst` requests, refilled at
 * `events` per `per`. `events` may be fractional (GoTrue reads a float). Auth's rate limits and IAM's login throttle
 * are both set this way.
 */
export interface RequestLimit {
  readonly events: number
  readonly per: Duration.Duration
  readonly burst: number
}
