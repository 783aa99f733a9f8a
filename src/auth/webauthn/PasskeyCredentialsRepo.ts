import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** A row of webauthn_credentials: a passkey (first-factor credential). bytea columns come back as raw bytes. */
export interface PasskeyRow {
  readonly id: string
  readonly user_id: string
  readonly credential_id: Uint8Array
  /** The COSE_Key, as the authenticator sent it. */
  readonly public_key: Uint8Array
  readonly attestation_type: string
  readonly aaguid: string | null
  readonly sign_count: number
  readonly transports: ReadonlyArray<string>
  readonly backup_eligible: boolean
  readonly backed_up: boolean
  readonly friendly_name: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly last_used_at: Date | null
}

export interface PasskeyInsert {
  readonly id: string
  readonly userId: string
  readonly credentialId: Uint8Array
  readonly publicKey: Uint8Array
  readonly attestationType: string
  readonly aaguid: string | null
  readonly signCount: number
  readonly transports: ReadonlyArray<string>
  readonly backupEligible: boolean
  readonly backedUp: boolean
  readonly friendlyName: string
  readonly now: Date
}

/** The ceremony a webauthn_challenges row was made for (GoTrue's CHECK also allows "signup", which nothing makes). */
export type PasskeyChallengeType = "registration" | "authentication"

/** A consumed webauthn_challenges row: go-webauthn SessionData JSON, and when it stopped being usable. */
export interface PasskeyChallengeRow {
  readonly id: string
  readonly session_data: unknown
  readonly expires_at: Date
}

export interface PasskeyChallengeInsert {
  readonly id: string
  /** The registering user; null for a discoverable login, whose user the assertion names. */
  readonly userId: string | null
  readonly type: PasskeyChallengeType
  readonly sessionData: unknown
  readonly now: Date
  readonly expiresAt: Date
}

const COLUMNS = [
  "id", "user_id", "credential_id", "public_key", "attestation_type", "aaguid", "sign_count", "transports",
  "backup_eligible", "backed_up", "friendly_name", "created_at", "updated_at", "last_used_at"
] as const

// bigint comes back from pg as a string; a sign count is at most 2^32 - 1, so a number holds it exactly.
const toRow = (row: Record<string, unknown>): PasskeyRow => ({
  ...(row as unknown as PasskeyRow),
  credential_id: new Uint8Array(row["credential_id"] as Uint8Array),
  public_key: new Uint8Array(row["public_key"] as Uint8Array),
  sign_count: Number(row["sign_count"]),
  transports: Array.isArray(row["transports"]) ? (row["transports"] as Array<unknown>).filter((t): t is string => typeof t === "string") : []
})

/**
 * GoTrue's webauthn_credentials and webauthn_challenges (migration 0016), in GoTrue's formats: raw bytes in the bytea
 * columns, transports as a JSON string array, session data as go-webauthn's SessionData JSON, so a database goes
 * back to GoTrue with its passkeys working.
 */
export class PasskeyCredentialsRepo extends Effect.Service<PasskeyCredentialsRepo>()("auth/PasskeyCredentialsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    const columns = sql.unsafe(COLUMNS.join(", "))

    /** A user's passkeys, oldest first (GoTrue's list order). */
    const forUser = traced("PasskeyCredentialsRepo.forUser")(function*(userId: string) {
      const rows = yield* sql<Record<string, unknown>>`SELECT ${columns} FROM ${sql(t.webauthn_credentials)}
        WHERE user_id = ${userId} ORDER BY created_at, id`
      return rows.map(toRow)
    }, Effect.orDie)

    const countForUser = traced("PasskeyCredentialsRepo.countForUser")(function*(userId: string) {
      const [row] = yield* sql<{ readonly count: number }>`SELECT count(*)::int AS count FROM ${sql(t.webauthn_credentials)}
        WHERE user_id = ${userId}`
      return row?.count ?? 0
    }, Effect.orDie)

    /** Stores a passkey; None when its credential id is already registered (to anyone: the id is unique). */
    const insert = traced("PasskeyCredentialsRepo.insert")(function*(passkey: PasskeyInsert) {
      // ON CONFLICT rather than catching 23505: the transaction it runs in stays usable for the caller's rollback.
      const rows = yield* sql<Record<string, unknown>>`INSERT INTO ${sql(t.webauthn_credentials)} ${sql.insert({
        id: passkey.id,
        user_id: passkey.userId,
        credential_id: Buffer.from(passkey.credentialId),
        public_key: Buffer.from(passkey.publicKey),
        attestation_type: passkey.attestationType,
        aaguid: passkey.aaguid,
        sign_count: passkey.signCount,
        transports: JSON.stringify(passkey.transports),
        backup_eligible: passkey.backupEligible,
        backed_up: passkey.backedUp,
        friendly_name: passkey.friendlyName,
        created_at: passkey.now,
        updated_at: passkey.now
      })} ON CONFLICT (credential_id) DO NOTHING RETURNING ${columns}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    /** The passkey with this credential id, whoever owns it. */
    const findByCredentialId = traced("PasskeyCredentialsRepo.findByCredentialId")(function*(credentialId: Uint8Array) {
      const rows = yield* sql<Record<string, unknown>>`SELECT ${columns} FROM ${sql(t.webauthn_credentials)}
        WHERE credential_id = ${Buffer.from(credentialId)}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    /** One passkey of one user; None for an unknown id or someone else's. */
    const findForUser = traced("PasskeyCredentialsRepo.findForUser")(function*(userId: string, id: string) {
      const rows = yield* sql<Record<string, unknown>>`SELECT ${columns} FROM ${sql(t.webauthn_credentials)}
        WHERE id = ${id} AND user_id = ${userId}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    /** Renames one passkey of one user and returns it; None for an unknown id or someone else's. */
    const rename = traced("PasskeyCredentialsRepo.rename")(function*(userId: string, id: string, friendlyName: string, now: Date) {
      const rows = yield* sql<Record<string, unknown>>`UPDATE ${sql(t.webauthn_credentials)}
        SET friendly_name = ${friendlyName}, updated_at = ${now}
        WHERE id = ${id} AND user_id = ${userId} RETURNING ${columns}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    /** Deletes one passkey of one user; false when there was none to delete. */
    const remove = traced("PasskeyCredentialsRepo.remove")(function*(userId: string, id: string) {
      const rows = yield* sql<{ readonly id: string }>`DELETE FROM ${sql(t.webauthn_credentials)}
        WHERE id = ${id} AND user_id = ${userId} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    /** Every passkey of a user (a soft-deleted user keeps none, as in GoTrue). */
    const removeForUser = traced("PasskeyCredentialsRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.webauthn_credentials)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    /** A sign-in with the passkey: its new sign count, and when it was used. */
    const recordUse = traced("PasskeyCredentialsRepo.recordUse")(function*(id: string, signCount: number, now: Date) {
      yield* sql`UPDATE ${sql(t.webauthn_credentials)}
        SET sign_count = ${signCount}, last_used_at = ${now}, updated_at = ${now} WHERE id = ${id}`
    }, Effect.orDie)

    const insertChallenge = traced("PasskeyCredentialsRepo.insertChallenge")(function*(challenge: PasskeyChallengeInsert) {
      yield* sql`INSERT INTO ${sql(t.webauthn_challenges)} ${sql.insert({
        id: challenge.id,
        user_id: challenge.userId,
        challenge_type: challenge.type,
        session_data: JSON.stringify(challenge.sessionData),
        created_at: challenge.now,
        expires_at: challenge.expiresAt
      })}`
    }, Effect.orDie)

    /**
     * Takes a challenge out, in one statement, so two requests with one challenge_id cannot both get it (GoTrue's
     * ConsumeWebAuthnChallengeByID). `userId` null matches only a challenge made for no user (a discoverable login).
     * An expired row is consumed too: the caller refuses it, and it is gone either way.
     */
    const consumeChallenge = traced("PasskeyCredentialsRepo.consumeChallenge")(function*(
      id: string,
      type: PasskeyChallengeType,
      userId: string | null
    ) {
      const owner = userId === null ? sql`user_id IS NULL` : sql`user_id = ${userId}`
      const rows = yield* sql<PasskeyChallengeRow>`DELETE FROM ${sql(t.webauthn_challenges)}
        WHERE id = ${id} AND challenge_type = ${type} AND ${owner}
        RETURNING id, session_data, expires_at`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** Deletes up to `limit` challenges that expired before `before`; how many it deleted. */
    const sweepChallenges = traced("PasskeyCredentialsRepo.sweepChallenges")(function*(before: Date, limit: number) {
      // SKIP LOCKED: a challenge a request is consuming right now is left to it, and the sweep never waits.
      const [row] = yield* sql<{ readonly swept: number }>`WITH swept AS (
          DELETE FROM ${sql(t.webauthn_challenges)} WHERE id IN (
            SELECT id FROM ${sql(t.webauthn_challenges)} WHERE expires_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        ) SELECT count(*)::int AS swept FROM swept`
      return row?.swept ?? 0
    }, Effect.orDie)

    return {
      forUser, countForUser, insert, findByCredentialId, findForUser, rename, remove, removeForUser, recordUse,
      insertChallenge, consumeChallenge, sweepChallenges
    } as const
  })
}) {}
