import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { FactorRow, FactorType } from "../domain/FactorRow.js"
import { traced } from "../../platform/Traced.js"

/** A factor with what only verification reads: the TOTP secret and the stored WebAuthn credential. */
export interface FactorWithSecrets extends FactorRow {
  readonly secret: string | null
  readonly web_authn_credential: unknown
}

export interface FactorInsert {
  readonly id: string
  readonly userId: string
  readonly type: FactorType
  readonly friendlyName: string
  readonly secret: string | null
  readonly phone: string | null
  readonly now: Date
}

export interface ChallengeRow {
  readonly id: string
  readonly factor_id: string
  readonly created_at: Date
  readonly verified_at: Date | null
  readonly ip_address: string
  readonly otp_code: string | null
  readonly web_authn_session_data: unknown
}

export interface ChallengeInsert {
  readonly id: string
  readonly factorId: string
  readonly ip: string
  readonly now: Date
  /** The texted code of a phone challenge, stored as GoTrue stores it; "" for TOTP, as GoTrue writes. */
  readonly otpCode: string | null
  readonly webAuthnSessionData: unknown
}

/** What a verification stores on a factor it verifies (WebAuthn: the credential it registered). */
export interface VerifiedFactorUpdate {
  readonly webAuthnCredential?: unknown
  readonly webAuthnAaguid?: string | null
  readonly lastWebAuthnChallengeData?: unknown
}

const FACTOR_COLUMNS = [
  "id", "user_id", "friendly_name", "factor_type", "status", "created_at", "updated_at", "phone", "last_challenged_at",
  "web_authn_aaguid", "last_webauthn_challenge_data"
] as const

const asJson = (value: unknown): string | null => (value === undefined || value === null ? null : JSON.stringify(value))

/**
 * GoTrue's mfa_factors and mfa_challenges, in GoTrue's formats (secrets base32 in plain text, phone digits without
 * "+", codes as typed), so a database stays readable by GoTrue after Gatehouse wrote to it. Failed-verification
 * counts live in Gatehouse's own mfa_factor_attempts.
 */
export class FactorsRepo extends Effect.Service<FactorsRepo>()("auth/FactorsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    const columns = sql.unsafe(FACTOR_COLUMNS.map((c) => `f.${c}`).join(", "))

    /** A user's factors, oldest first, unverified ones too (GET /user lists them all). */
    const forUser = traced("FactorsRepo.forUser")(function*(userId: string) {
      return yield* sql<FactorRow>`SELECT ${columns} FROM ${sql(t.mfa_factors)} f
        WHERE f.user_id = ${userId} ORDER BY f.created_at, f.id`
    }, Effect.orDie)

    /** One factor of one user, with its secrets, locked until the transaction ends; None for someone else's. */
    const lockForUser = traced("FactorsRepo.lockForUser")(function*(userId: string, factorId: string) {
      const rows = yield* sql<FactorWithSecrets>`SELECT ${columns}, f.secret, f.web_authn_credential
        FROM ${sql(t.mfa_factors)} f WHERE f.id = ${factorId} AND f.user_id = ${userId} FOR UPDATE`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /**
     * The stored credentials of a user's verified WebAuthn factors, oldest first: GoTrue's user.WebAuthnCredentials(),
     * which a registration excludes and an MFA login allows (any of them, whichever factor was challenged).
     */
    const verifiedWebAuthnCredentials = traced("FactorsRepo.verifiedWebAuthnCredentials")(function*(userId: string) {
      return yield* sql<{ readonly id: string; readonly web_authn_credential: unknown }>`SELECT f.id, f.web_authn_credential
        FROM ${sql(t.mfa_factors)} f WHERE f.user_id = ${userId} AND f.factor_type = 'webauthn' AND f.status = 'verified'
        ORDER BY f.created_at, f.id`
    }, Effect.orDie)

    const insert = traced("FactorsRepo.insert")(function*(factor: FactorInsert) {
      const [row] = yield* sql<FactorRow>`INSERT INTO ${sql(t.mfa_factors)} AS f ${sql.insert({
        id: factor.id,
        user_id: factor.userId,
        friendly_name: factor.friendlyName,
        factor_type: factor.type,
        status: "unverified",
        created_at: factor.now,
        updated_at: factor.now,
        // GoTrue scans secret into a plain string: a phone or WebAuthn factor has "" there, never NULL.
        secret: factor.secret ?? "",
        phone: factor.phone
      })} RETURNING ${columns}`
      return row!
    }, Effect.orDie)

    /**
     * GoTrue's clean-up on every enrolment: unverified factors never challenged, older than the expiry, of every
     * user (a factor someone abandoned mid-enrolment would otherwise hold its name and count against the cap).
     */
    const purgeAbandoned = traced("FactorsRepo.purgeAbandoned")(function*(createdBefore: Date) {
      yield* sql`DELETE FROM ${sql(t.mfa_factors)} f WHERE f.status = 'unverified' AND f.created_at < ${createdBefore}
        AND NOT EXISTS (SELECT 1 FROM ${sql(t.mfa_challenges)} c WHERE c.factor_id = f.id)`
    }, Effect.orDie)

    /** Deletes a user's unverified phone factors for one number (a new enrolment of that number replaces them). */
    const removeUnverifiedPhone = traced("FactorsRepo.removeUnverifiedPhone")(function*(userId: string, phone: string) {
      yield* sql`DELETE FROM ${sql(t.mfa_factors)} WHERE user_id = ${userId} AND factor_type = 'phone'
        AND status = 'unverified' AND phone = ${phone}`
    }, Effect.orDie)

    /** Deletes a factor (its challenges and attempt counts cascade) and returns it as it was. */
    const remove = traced("FactorsRepo.remove")(function*(factorId: string) {
      const rows = yield* sql<FactorRow>`DELETE FROM ${sql(t.mfa_factors)} f WHERE f.id = ${factorId} RETURNING ${columns}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** Every factor of a user (a soft-deleted user keeps no factor, as in GoTrue). */
    const removeForUser = traced("FactorsRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.mfa_factors)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    /** The admin's update: a new name and, for a phone factor, a new number (undefined leaves each as it is). */
    const update = traced("FactorsRepo.update")(function*(
      factorId: string,
      changes: { readonly friendlyName?: string; readonly phone?: string },
      now: Date
    ) {
      const rows = yield* sql<FactorRow>`UPDATE ${sql(t.mfa_factors)} f SET
          friendly_name = COALESCE(${changes.friendlyName ?? null}, f.friendly_name),
          phone = CASE WHEN f.factor_type = 'phone' THEN COALESCE(${changes.phone ?? null}, f.phone) ELSE f.phone END,
          updated_at = ${now}
        WHERE f.id = ${factorId} RETURNING ${columns}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /**
     * Marks a factor verified (WebAuthn: with the credential it registered) and deletes the user's other unverified
     * factors of its type, as GoTrue does once one of them is verified.
     */
    const markVerified = traced("FactorsRepo.markVerified")(function*(factor: FactorRow, changes: VerifiedFactorUpdate, now: Date) {
      yield* sql`UPDATE ${sql(t.mfa_factors)} SET status = 'verified', updated_at = ${now},
          web_authn_credential = COALESCE(${asJson(changes.webAuthnCredential)}::jsonb, web_authn_credential),
          web_authn_aaguid = COALESCE(${changes.webAuthnAaguid ?? null}::uuid, web_authn_aaguid),
          last_webauthn_challenge_data = COALESCE(${asJson(changes.lastWebAuthnChallengeData)}::jsonb, last_webauthn_challenge_data)
        WHERE id = ${factor.id}`
      yield* sql`DELETE FROM ${sql(t.mfa_factors)} WHERE user_id = ${factor.user_id} AND factor_type = ${factor.factor_type}
        AND status = 'unverified' AND id <> ${factor.id}`
    }, Effect.orDie)

    /** Deletes a user's unverified factors of a type but one (GoTrue does after every verification, not only the first). */
    const removeUnverifiedOfType = traced("FactorsRepo.removeUnverifiedOfType")(function*(factor: FactorRow) {
      yield* sql`DELETE FROM ${sql(t.mfa_factors)} WHERE user_id = ${factor.user_id} AND factor_type = ${factor.factor_type}
        AND status = 'unverified' AND id <> ${factor.id}`
    }, Effect.orDie)

    /** Records a WebAuthn sign-in's challenge data on a verified factor. */
    const noteWebAuthnChallenge = traced("FactorsRepo.noteWebAuthnChallenge")(function*(factorId: string, data: unknown, now: Date) {
      yield* sql`UPDATE ${sql(t.mfa_factors)} SET last_webauthn_challenge_data = ${asJson(data)}::jsonb, updated_at = ${now}
        WHERE id = ${factorId}`
    }, Effect.orDie)

    /**
     * Stores a challenge and stamps the factor challenged. last_challenged_at is UNIQUE across every factor in
     * GoTrue's schema, so two factors challenged in the same microsecond would collide: the stamp takes the first
     * free microsecond from `now` on.
     */
    const insertChallenge = traced("FactorsRepo.insertChallenge")(function*(challenge: ChallengeInsert) {
      yield* sql`INSERT INTO ${sql(t.mfa_challenges)} ${sql.insert({
        id: challenge.id,
        factor_id: challenge.factorId,
        created_at: challenge.now,
        ip_address: challenge.ip,
        // A plain string to GoTrue too: "" for a challenge that texts no code.
        otp_code: challenge.otpCode ?? "",
        web_authn_session_data: asJson(challenge.webAuthnSessionData)
      })}`
      yield* sql`UPDATE ${sql(t.mfa_factors)} SET last_challenged_at = (
          SELECT min(at) FROM generate_series(${challenge.now}::timestamptz, ${challenge.now}::timestamptz + interval '1 millisecond',
            interval '1 microsecond') at
          WHERE NOT EXISTS (SELECT 1 FROM ${sql(t.mfa_factors)} o WHERE o.last_challenged_at = at))
        WHERE id = ${challenge.factorId}`
    }, Effect.orDie)

    /** A challenge of this factor, locked until the transaction ends. */
    const lockChallenge = traced("FactorsRepo.lockChallenge")(function*(factorId: string, challengeId: string) {
      const rows = yield* sql<ChallengeRow>`SELECT id, factor_id, created_at, verified_at, host(ip_address) AS ip_address,
          otp_code, web_authn_session_data
        FROM ${sql(t.mfa_challenges)} WHERE id = ${challengeId} AND factor_id = ${factorId} FOR UPDATE`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const markChallengeVerified = traced("FactorsRepo.markChallengeVerified")(function*(challengeId: string, now: Date) {
      yield* sql`UPDATE ${sql(t.mfa_challenges)} SET verified_at = ${now} WHERE id = ${challengeId}`
    }, Effect.orDie)

    const removeChallenge = traced("FactorsRepo.removeChallenge")(function*(challengeId: string) {
      yield* sql`DELETE FROM ${sql(t.mfa_challenges)} WHERE id = ${challengeId}`
    }, Effect.orDie)

    /**
     * Counts a failed verification and answers the count in the window that started at the first failure since the
     * last success (a failure after the window starts a new one).
     */
    const recordFailure = traced("FactorsRepo.recordFailure")(function*(factorId: string, now: Date, windowStart: Date) {
      const [row] = yield* sql<{ failures: number }>`
        INSERT INTO ${sql(t.mfa_factor_attempts)} AS a (factor_id, failures, window_start) VALUES (${factorId}, 1, ${now})
        ON CONFLICT (factor_id) DO UPDATE SET
          failures = CASE WHEN a.window_start < ${windowStart} OR a.failures = 0 THEN 1 ELSE a.failures + 1 END,
          window_start = CASE WHEN a.window_start < ${windowStart} OR a.failures = 0 THEN ${now} ELSE a.window_start END
        RETURNING failures`
      return row!.failures
    }, Effect.orDie)

    /** Failures counted in the window (0 when the last one is older than `windowStart`). */
    const failures = traced("FactorsRepo.failures")(function*(factorId: string, windowStart: Date) {
      const rows = yield* sql<{ failures: number; window_start: Date }>`
        SELECT failures, window_start FROM ${sql(t.mfa_factor_attempts)} WHERE factor_id = ${factorId}`
      const row = rows[0]
      return row === undefined || row.window_start < windowStart ? { count: 0, since: undefined } : { count: row.failures, since: row.window_start }
    }, Effect.orDie)

    const clearFailures = traced("FactorsRepo.clearFailures")(function*(factorId: string) {
      yield* sql`UPDATE ${sql(t.mfa_factor_attempts)} SET failures = 0 WHERE factor_id = ${factorId}`
    }, Effect.orDie)

    /** The time step of the last TOTP code accepted for the factor (the replay guard), if any. */
    const lastTotpStep = traced("FactorsRepo.lastTotpStep")(function*(factorId: string) {
      const rows = yield* sql<{ last_totp_step: string | number | null }>`
        SELECT last_totp_step FROM ${sql(t.mfa_factor_attempts)} WHERE factor_id = ${factorId}`
      const step = rows[0]?.last_totp_step
      return step === undefined || step === null ? Option.none<number>() : Option.some(Number(step))
    }, Effect.orDie)

    /** Records the time step of a TOTP code just accepted, so that it and earlier steps are refused from now on. */
    const noteTotpStep = traced("FactorsRepo.noteTotpStep")(function*(factorId: string, step: number, now: Date) {
      yield* sql`INSERT INTO ${sql(t.mfa_factor_attempts)} AS a (factor_id, failures, window_start, last_totp_step)
        VALUES (${factorId}, 0, ${now}, ${step})
        ON CONFLICT (factor_id) DO UPDATE SET failures = 0, last_totp_step = GREATEST(a.last_totp_step, ${step})`
    }, Effect.orDie)

    /**
     * One batch of the sweep: at most `limit` challenges and `limit` never-verified factors older than `before` (the
     * rows a request holds are skipped, never waited for). How many of each it deleted.
     */
    const sweep = traced("FactorsRepo.sweep")(function*(before: Date, limit: number) {
      const challenges = yield* sql`DELETE FROM ${sql(t.mfa_challenges)} WHERE id IN (
          SELECT id FROM ${sql(t.mfa_challenges)} WHERE created_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      const factors = yield* sql`DELETE FROM ${sql(t.mfa_factors)} WHERE id IN (
          SELECT id FROM ${sql(t.mfa_factors)} WHERE status = 'unverified' AND created_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return { challenges: challenges.length, factors: factors.length }
    }, Effect.orDie)

    return {
      forUser, lockForUser, verifiedWebAuthnCredentials, insert, purgeAbandoned, removeUnverifiedPhone, remove, removeForUser, update,
      markVerified, removeUnverifiedOfType, noteWebAuthnChallenge, insertChallenge, lockChallenge, markChallengeVerified, removeChallenge,
      recordFailure, failures, clearFailures, lastTotpStep, noteTotpStep, sweep
    } as const
  })
}) {}
