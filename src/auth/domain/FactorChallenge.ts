import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthError } from "./AuthError.js"

/**
 * The rules a second factor's challenge is verified by: GoTrue's expiry, and Gatehouse's two guards GoTrue lacks
 * (a limit on failed verifications per factor, and a TOTP code accepted only once).
 */

/** When a challenge made at `createdAt` stops being verifiable (the `expires_at` a challenge answer carries). */
export const challengeExpiresAt = (createdAt: Date, expiry: Duration.Duration): Date =>
  new Date(createdAt.getTime() + Duration.toMillis(expiry))

/** GoTrue's rule: expired once `now` is past creation plus MFA_CHALLENGE_EXPIRY_DURATION (the instant itself is still good). */
export const isChallengeExpired = (createdAt: Date, expiry: Duration.Duration, now: Date): boolean =>
  now.getTime() > challengeExpiresAt(createdAt, expiry).getTime()

/** The failures counted against a factor in its current window, and when that window began. */
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

/**
 * Whether a TOTP code that matched at time step `step` replays one already accepted for the factor: steps only move
 * forward, so a code of the last accepted step (or, with the ±1 skew, an earlier one) was seen before.
 */
export const isTotpReplay = (lastAccepted: Option.Option<number>, step: number): boolean =>
  Option.match(lastAccepted, { onNone: () => false, onSome: (last) => step <= last })

/** GoTrue's first check of a TOTP or phone verification, before any switch: a code must be sent. */
export const requireCode = ({ code }: { readonly code: string }): Effect.Effect<void, AuthError> =>
  code === "" ? Effect.fail(AuthError.validation("Code needs to be non-empty")) : Effect.void
