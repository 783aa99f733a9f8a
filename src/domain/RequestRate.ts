import * as Duration from "effect/Duration"

/**
 * GoTrue's per-IP limiters are tollbooth token buckets (golang.org/x/time/rate): a bucket of `burst` tokens,
 * full at first, refilled at `events` per `per`, each request taking one. The same rule as GCRA keeps one number
 * per client instead of two (tokens and last refill): the theoretical arrival time (TAT), the moment the bucket
 * would be full again. A request at `now` passes when TAT - now <= (burst - 1) intervals, and moves TAT one
 * interval past max(TAT, now); a refused request changes nothing. With whole milliseconds this is exactly the
 * bucket (test/domain/RequestRate.test.ts checks it against one), and it is one comparison and one
 * addition, which a repo's single SQL statement can repeat (the auth product's RateLimitsRepo does). It lives in
 * the shared domain because both products count clients this way.
 */
export interface RequestRate {
  /** Milliseconds one request costs at the sustained rate: `per` / `events`, rounded up, at least 1. */
  readonly intervalMs: number
  /** How far TAT may run ahead of now and still admit a request: burst - 1 intervals. Negative: nothing passes. */
  readonly toleranceMs: number
}

/**
 * `events` per `per` with bursts of `burst`. An interval is rounded up to a whole millisecond, so the rate is
 * never more than the one configured (and at most 1000 a second per client). No events, or a burst under one
 * request, shuts the door: nothing passes, as GoTrue's anonymous limiter does with a value under 1.
 */
export const requestRate = (events: number, per: Duration.Duration, burst: number): RequestRate => {
  const periodMs = Math.max(1, Math.ceil(Duration.toMillis(per)))
  const wholeBurst = Math.floor(burst)
  if (!(events > 0) || wholeBurst < 1) return { intervalMs: periodMs, toleranceMs: -periodMs }
  const intervalMs = Math.max(1, Math.ceil(periodMs / events))
  return { intervalMs, toleranceMs: (wholeBurst - 1) * intervalMs }
}

/** Whether a rate lets anything through at all: a shut one needs no bookkeeping. */
export const admitsAny = (rate: RequestRate): boolean => rate.toleranceMs >= 0

/** The outcome of one request: its client's new TAT, or how long until a request could pass. */
export type Admission =
  | { readonly allowed: true; readonly tat: number }
  | { readonly allowed: false; readonly retryAfterMs: number }

/**
 * One request at `nowMs` against a client whose TAT is `tat` (undefined: never seen, or swept, which is the same
 * full bucket). A TAT ahead of `nowMs` by more than a bucket's worth, as an instance with a lagging clock sees
 * another's, only makes the request wait longer: it never admits more.
 */
export const admitRequest = (tat: number | undefined, nowMs: number, rate: RequestRate): Admission => {
  const from = tat === undefined ? nowMs : Math.max(tat, nowMs)
  return from - nowMs <= rate.toleranceMs
    ? { allowed: true, tat: from + rate.intervalMs }
    : { allowed: false, retryAfterMs: from - rate.toleranceMs - nowMs }
}

/**
 * Gives back what an admitted request took, for a request that turned out not to count (a limiter of failures
 * admits every attempt as one, and refunds those that succeed): its client's TAT one interval earlier. A TAT that
 * falls behind the clock is a full bucket, as ever, so later decisions are those the request never made.
 */
export const refundRequest = (tat: number, rate: RequestRate): number => tat - rate.intervalMs

/**
 * A TAT at or before `nowMs` is a full bucket, the same as no row: such rows can be deleted without changing any
 * decision.
 */
export const isRefilled = (tat: number, nowMs: number): boolean => tat <= nowMs
