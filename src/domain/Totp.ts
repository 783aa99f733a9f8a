import * as Option from "effect/Option"
import { ScureBase32Plugin, verifySync } from "otplib"

/**
 * TOTP (RFC 6238) in GoTrue's parameters (pquerna/otp's defaults): SHA-1, 6 digits, 30-second steps, and one step of
 * skew either way. One engine for both products: the auth server's MFA factor (auth/mfa/TotpFactor) and the IAM
 * service's two-step verification (iam/twostep). The secret's bytes come from the caller (SecureRandom), never from a
 * library's own generator, so randomness stays in one place.
 */

/** GoTrue's secret size: 20 bytes, 32 base32 characters. */
export const TOTP_SECRET_BYTES = 20

const BASE32 = new ScureBase32Plugin()

/** A secret as GoTrue stores and shows it: RFC 4648 base32 of the bytes, without padding. */
export const totpSecret = (bytes: Uint8Array): string => BASE32.encode(bytes, { padding: false })

/** Where a code matched: its RFC 6238 time step (for a replay guard: a later code must match a later step). */
export interface TotpMatch {
  readonly timeStep: number
  /** The step's offset from `now`'s: -1, 0 or 1. */
  readonly delta: number
}

const PERIOD_SECONDS = 30
const SIX_DIGITS = /^[0-9]{6}$/

/**
 * Whether `code` is the TOTP of `secretBase32` for the step of `now` or the one before or after, and where it
 * matched. As GoTrue (hotp.ValidateCustom), surrounding white space is trimmed and a code of any other length is
 * simply not a match. A secret that is not base32 of at least 16 bytes never matches (otplib's floor; GoTrue only
 * ever stores 20): this is how a secret encrypted by GoTrue's DB encryption, which Gatehouse cannot read, fails
 * closed.
 */
export const verifyTotp = (secretBase32: string, code: string, now: Date): Option.Option<TotpMatch> => {
  const token = code.trim()
  if (!SIX_DIGITS.test(token)) return Option.none()
  const epoch = Math.floor(now.getTime() / 1000)
  try {
    const result = verifySync({
      secret: secretBase32.trim(),
      token,
      algorithm: "sha1",
      digits: 6,
      period: PERIOD_SECONDS,
      epoch,
      // Seconds either way: with a 30-second period, exactly the step before and the step after.
      epochTolerance: PERIOD_SECONDS
    })
    // The functional API's result type also covers HOTP, which has no time step: it is `now`'s step plus the delta.
    return result.valid
      ? Option.some({ timeStep: Math.floor(epoch / PERIOD_SECONDS) + result.delta, delta: result.delta })
      : Option.none()
  } catch {
    // otplib throws only for what it cannot use as a secret (not base32, too short): no code matches it.
    return Option.none()
  }
}

/**
 * Whether a TOTP code that matched at time step `step` replays one already accepted for the factor: steps only move
 * forward, so a code of the last accepted step (or, with the ±1 skew, an earlier one) was seen before.
 */
export const isTotpReplay = (lastAccepted: Option.Option<number>, step: number): boolean =>
  Option.match(lastAccepted, { onNone: () => false, onSome: (last) => step <= last })
