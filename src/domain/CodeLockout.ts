import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

/**
 * The lockout of a short code that a person types (a second factor's): a few failures per window, then no code is
 * even compared until the window ends. Shared by the auth server's MFA and the IAM service's two-step verification.
 */

/** The failures counted against a code's factor in its current window, and when that window began. */
export interface FactorFailures {
  readonly count: number
  readonly since: Date | undefined
}

/**
 * Whether a factor must refuse verification now, having taken `max` failures within `window` of the first: the
 * milliseconds until its window ends (a Retry-After), or None when a code may be tried. Refusing before the code is
 * compared is what makes guessing a 6-digit code hopeless: `max` guesses per window, whatever the number of IPs.
 */
export const verifyLockout = (
  failures: FactorFailures,
  max: number,
  window: Duration.Duration,
  now: Date
): Option.Option<number> => {
  if (failures.count < max || failures.since === undefined) return Option.none()
  const remaining = failures.since.getTime() + Duration.toMillis(window) - now.getTime()
  return remaining > 0 ? Option.some(remaining) : Option.none()
}
