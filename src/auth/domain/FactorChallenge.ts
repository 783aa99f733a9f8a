import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { AuthError } from "./AuthError.js"

/**
 * The rules a second factor's challenge is verified by: GoTrue's expiry and its first check. Gatehouse's two guards
 * GoTrue lacks, shared with the IAM service, are domain/CodeLockout (a limit on failed verifications per factor) and
 * domain/Totp's isTotpReplay (a TOTP code accepted only once).
 */

/** When a challenge made at `createdAt` stops being verifiable (the `expires_at` a challenge answer carries). */
export const challengeExpiresAt = (createdAt: Date, expiry: Duration.Duration): Date =>
  new Date(createdAt.getTime() + Duration.toMillis(expiry))

/** GoTrue's rule: expired once `now` is past creation plus MFA_CHALLENGE_EXPIRY_DURATION (the instant itself is still good). */
export const isChallengeExpired = (createdAt: Date, expiry: Duration.Duration, now: Date): boolean =>
  now.getTime() > challengeExpiresAt(createdAt, expiry).getTime()

/** GoTrue's first check of a TOTP or phone verification, before any switch: a code must be sent. */
export const requireCode = ({ code }: { readonly code: string }): Effect.Effect<void, AuthError> =>
  code === "" ? Effect.fail(AuthError.validation("Code needs to be non-empty")) : Effect.void
