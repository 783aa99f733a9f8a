import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AuthError } from "../domain/AuthError.js"
import type { FactorRow, FactorType } from "../domain/FactorRow.js"
import type { UserRow } from "../domain/UserRow.js"
import type { ChallengeRow, FactorWithSecrets, VerifiedFactorUpdate } from "./FactorsRepo.js"

/**
 * What one type of second factor (TOTP, phone, WebAuthn) adds to the routes every factor shares. The MFA feature runs
 * the shared part, in GoTrue's order (authentication, loadFactor, the switches, validateFactors, challenge validity,
 * the failure limit, the step-up) and asks the factor's kind only for what differs. It lives on this floor so a kind
 * can be written beside what it needs (the WebAuthn ceremonies) and registered in the MFA feature's FactorKinds.
 */
export interface FactorKind {
  readonly type: FactorType
  /**
   * The type's own checks of an enrolment, before the common ones (GoTrue checks a phone factor's number first). It
   * runs outside any transaction and may write (a phone enrolment replaces the user's unverified factors of its number).
   */
  readonly beforeEnroll: (request: EnrollRequest) => Effect.Effect<void, AuthError>
  /** After the common checks passed: what the new factor stores, and what the enrolment answer adds. */
  readonly enroll: (request: EnrollRequest) => Effect.Effect<NewFactor, AuthError>
  /**
   * A new challenge of the factor, inside the transaction that holds the factor's row locked and then writes the
   * challenge row with `challengeId`. A failure rolls the transaction back (nothing is stored).
   */
  readonly challenge: (input: ChallengeInput) => Effect.Effect<NewChallenge, AuthError>
  /**
   * What the verify body must carry for this type, checked before the verify switch (GoTrue: "Code needs to be
   * non-empty"). A type whose checks GoTrue makes after its switch (WebAuthn) checks nothing while the switch is off.
   */
  readonly checkVerifyRequest: (request: VerifyRequest) => Effect.Effect<void, AuthError>
  /**
   * Judges a response to a challenge that exists, is this caller's, is not spent and has not expired; the factor is
   * locked and the per-factor failure limit already checked. Runs inside the verify transaction: what it writes
   * commits with the step-up, or with the failure count when it rejects.
   */
  readonly verify: (input: VerifyInput) => Effect.Effect<Verdict, AuthError>
  /** What becomes of the challenge once verified: GoTrue marks TOTP and phone challenges verified, deletes WebAuthn ones. */
  readonly spentChallenge: "mark_verified" | "delete"
  /**
   * Whether the challenge is deleted when the factor reaches the failure limit: yes for a texted code, which would
   * otherwise be guessable again once the window ends; a TOTP challenge carries no secret.
   */
  readonly deleteChallengeAtFailureLimit: boolean
}

/** An enrolment as the caller sent it (absent strings are ""). */
export interface EnrollRequest {
  readonly user: UserRow
  /** The user's factors as they stand (after the type's own checks and the clean-up: re-read). */
  readonly factors: ReadonlyArray<FactorRow>
  readonly friendlyName: string
  readonly issuer: string
  readonly phone: string
  readonly now: Date
}

export interface NewFactor {
  /** mfa_factors.secret (TOTP: base32), or null. */
  readonly secret: string | null
  /** mfa_factors.phone (digits, no "+"), or null. */
  readonly phone: string | null
  /** Keys the enrolment answer adds after `id`, `type` and `friendly_name` (TOTP: `totp`; phone: `phone`). */
  readonly answer: Readonly<Record<string, unknown>>
}

/** The challenge body as sent, or null for an empty body (TOTP never reads it; GoTrue's other types answer 400 bad_json). */
export interface ChallengeBody {
  readonly channel: string | null | undefined
  readonly webauthn: unknown
}

export interface ChallengeInput {
  readonly user: UserRow
  readonly factor: FactorWithSecrets
  readonly challengeId: string
  readonly body: ChallengeBody | null
  readonly now: Date
}

export interface NewChallenge {
  /** mfa_challenges.otp_code: the texted code of a phone challenge; "" for TOTP and WebAuthn (as GoTrue writes). */
  readonly otpCode: string | null
  /** mfa_challenges.web_authn_session_data, or null. */
  readonly webAuthnSessionData: unknown
  /** Keys the challenge answer adds after `id`, `type` and `expires_at` (WebAuthn: `webauthn`). */
  readonly answer: Readonly<Record<string, unknown>>
}

/** The verify body as sent (absent `code` is ""). */
export interface VerifyRequest {
  readonly code: string
  readonly webauthn: unknown
}

export interface VerifyInput extends VerifyRequest {
  readonly user: UserRow
  readonly factor: FactorWithSecrets
  readonly challenge: ChallengeRow
  readonly now: Date
}

/** A kind's judgement: accepted (with what the factor stores once verified), or rejected with GoTrue's answer. */
export type Verdict =
  | { readonly _tag: "Accepted"; readonly update: VerifiedFactorUpdate }
  | { readonly _tag: "Rejected"; readonly error: AuthError }

/** The registered kinds, by factor type: a type with no kind is treated as switched off. */
export class FactorKinds extends Context.Tag("auth/FactorKinds")<FactorKinds, ReadonlyMap<FactorType, FactorKind>>() {}
