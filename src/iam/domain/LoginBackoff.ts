/**
 * An account's backoff: after `after` failures in a row its next attempt waits `firstMs`, and each further
 * failure doubles the wait, up to `maxMs`. Failures are forgotten once the account has been left alone for
 * `forgetAfterMs` past its wait.
 */
export interface LoginBackoff {
  readonly after: number
  readonly firstMs: number
  readonly maxMs: number
  readonly forgetAfterMs: number
}

/** An account's record: its failures in a row, and until when (ms since the epoch) its next attempt must wait. */
export interface FailureCount {
  readonly failures: number
  readonly blockedUntilMs: number
}

export type LoginAdmission =
  /** The attempt may go ahead; `count` is the record to keep while its outcome is unknown. */
  | { readonly allowed: true; readonly count: FailureCount }
  | { readonly allowed: false; readonly retryAfterMs: number }

// 2^40 times a millisecond is 35 years: past any cap, and far inside a double's (and a bigint's) exact integers.
const MAX_DOUBLINGS = 40

/** The wait that `failures` failures in a row impose on the next attempt. */
export const backoffMs = (failures: number, backoff: LoginBackoff): number =>
  failures < backoff.after
    ? 0
    : Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(failures - backoff.after, MAX_DOUBLINGS))

/** A record whose wait ended `forgetAfterMs` ago counts as none: it may be deleted without changing a decision. */
export const isForgotten = (count: FailureCount, nowMs: number, backoff: LoginBackoff): boolean =>
  count.blockedUntilMs + backoff.forgetAfterMs <= nowMs

/**
 * One attempt at `nowMs` on an account whose record is `count` (undefined: none). While the account's wait has not
 * passed it is refused, whatever the password: a throttle that let the right password through would let a guesser
 * try at full speed and learn the answer from which guess got in. Otherwise it goes ahead, counted as a failure
 * already, with the wait that failure would impose; the caller forgets the record when the password was right.
 * Counting before the password is checked is what stops many guesses sent at once from all finding the account
 * unblocked.
 */
export const admitLogin = (count: FailureCount | undefined, nowMs: number, backoff: LoginBackoff): LoginAdmission => {
  const current = count === undefined || isForgotten(count, nowMs, backoff) ? undefined : count
  if (current !== undefined && current.blockedUntilMs > nowMs) return { allowed: false, retryAfterMs: current.blockedUntilMs - nowMs }
  const failures = (current?.failures ?? 0) + 1
  return { allowed: true, count: { failures, blockedUntilMs: nowMs + backoffMs(failures, backoff) } }
}
