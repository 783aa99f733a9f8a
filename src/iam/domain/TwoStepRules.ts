import { createHash } from "node:crypto"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { type FactorFailures, verifyLockout } from "../../domain/CodeLockout.js"
import { isTotpReplay, verifyTotp } from "../../domain/Totp.js"

/**
 * The rules of IAM's two-step verification: how a TOTP code is judged against an account's factor, and what a
 * second-step ticket allows. Pure: the service locks the rows, asks these, and writes what they decided.
 */

/** An account's TOTP factor as the judgement needs it. */
export interface TotpFactorState {
  readonly secret: string
  /** The time step of the last accepted code; None before the first. */
  readonly lastStep: Option.Option<number>
  readonly failures: FactorFailures
}

export interface CodeLimits {
  /** Wrong codes per window (AUTH_IAM_TOTP_MAX_FAILURES). */
  readonly maxFailures: number
  readonly failureWindow: Duration.Duration
}

export type CodeVerdict =
  /** The factor has taken its wrong codes for this window: no code is compared, right or wrong. */
  | { readonly _tag: "Locked"; readonly retryAfterMs: number }
  /** Not a code of the secret now, or one already accepted (a replay): a failure to count. */
  | { readonly _tag: "Wrong" }
  /** Accepted: the factor's last step becomes `step`, and its failures are forgotten. */
  | { readonly _tag: "Accepted"; readonly step: number }

/**
 * The verdict on `code` for `factor` at `now`. The lockout comes first, so a locked factor says nothing about the
 * code; a code is accepted only at a time step later than the last accepted one, so none is accepted twice.
 */
export const judgeCode = (factor: TotpFactorState, code: string, now: Date, limits: CodeLimits): CodeVerdict => {
  const locked = verifyLockout(factor.failures, limits.maxFailures, limits.failureWindow, now)
  if (Option.isSome(locked)) return { _tag: "Locked", retryAfterMs: locked.value }
  const match = verifyTotp(factor.secret, code, now)
  if (Option.isNone(match) || isTotpReplay(factor.lastStep, match.value.timeStep)) return { _tag: "Wrong" }
  return { _tag: "Accepted", step: match.value.timeStep }
}

/**
 * The failures after one more wrong code at `now`: counted in the current window, or the first of a new one once the
 * window of the first has passed.
 */
export const failuresAfterWrong = (failures: FactorFailures, window: Duration.Duration, now: Date): FactorFailures =>
  failures.since === undefined || failures.since.getTime() + Duration.toMillis(window) <= now.getTime()
    ? { count: 1, since: now }
    : { count: failures.count + 1, since: failures.since }

/** A second-step ticket as stored. */
export interface StoredTicket {
  readonly userId: number
  readonly expiresAt: Date
  readonly failures: number
}

export type TicketState =
  | { readonly _tag: "Unknown" }
  /** Past its expiry (the instant itself is still good). */
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Usable"; readonly userId: number }

export const ticketState = (ticket: StoredTicket | undefined, now: Date): TicketState =>
  ticket === undefined ? { _tag: "Unknown" }
  : now.getTime() > ticket.expiresAt.getTime() ? { _tag: "Expired" }
  : { _tag: "Usable", userId: ticket.userId }

/** Whether a ticket that has just taken one more wrong code, reaching `failures`, is spent: it is then deleted. */
export const ticketExhausted = (failures: number, attempts: number): boolean => failures >= attempts

/** Bytes of a ticket: 256 bits, as unguessable as a refresh token. */
export const TICKET_BYTES = 32

/** A ticket as the client gets it: base64url of its random bytes. */
export const ticketOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url")

/**
 * What the table keeps of a ticket: its SHA-256, hex. A ticket is a bearer secret for its lifetime, so a read of the
 * table (a backup, a replica) must not be enough to redeem one.
 */
export const ticketDigest = (ticket: string): string => createHash("sha256").update(ticket, "utf8").digest("hex")
