import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { CurrentClient } from "../../platform/http/CurrentClient.js"
import type { UserRow } from "../domain/UserRow.js"
import { AuditLogRepo, type AuditPayload, type NewAuditLogEntry } from "./AuditLogRepo.js"
import { traced } from "../../platform/Traced.js"

/** GoTrue's audit actions and the log type each is filed under (internal/models/audit_log_entry.go). */
const LOG_TYPES = {
  login: "account",
  logout: "account",
  invite_accepted: "account",
  user_signedup: "team",
  user_invited: "team",
  user_deleted: "team",
  token_revoked: "token",
  token_refreshed: "token",
  user_modified: "user",
  user_recovery_requested: "user",
  user_reauthenticate_requested: "user",
  user_confirmation_requested: "user",
  user_repeated_signup: "user",
  user_updated_password: "user",
  factor_in_progress: "factor",
  factor_unenrolled: "factor",
  challenge_created: "factor",
  verification_attempted: "factor",
  factor_deleted: "factor",
  factor_updated: "factor",
  identity_linked: "user",
  identity_unlinked: "user",
  passkey_created: "user",
  passkey_updated: "user",
  passkey_deleted: "user"
} as const

export type AuditAction = keyof typeof LOG_TYPES

/** An action and its traits, for code that hands an entry to be written elsewhere (AccessTokens.issue). */
export interface AuditEvent {
  readonly action: AuditAction
  readonly traits?: Readonly<Record<string, unknown>> | undefined
}

/** Who acted, when it is not a user row: an admin token, say (see adminActor). */
export interface AuditActor {
  readonly id: string
  readonly username: string
  readonly viaSso?: boolean
}

export interface AuditRecord {
  readonly actor: UserRow | AuditActor
  /** Non-secret details (provider, user_id of the user acted on, …); keys naming a secret are dropped. */
  readonly traits?: Readonly<Record<string, unknown>> | undefined
  /**
   * The client's address, when the caller knows it better than the request does; stored as at most 64 characters.
   * Without it, an entry written while serving a request has that request's client (see AuditLog).
   */
  readonly ip?: string
}

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * The actor GoTrue records for an admin request: no user, only the token's role, which stands in as the
 * username (GoTrue's requireAdmin makes `User{Role: role, Email: role}`).
 */
export const adminActor = (claims: Readonly<Record<string, unknown>>): AuditActor => ({
  id: NIL_UUID,
  username: typeof claims["role"] === "string" ? claims["role"] : ""
})

/** The traits GoTrue gives an admin's entry about the user acted on. */
export const subjectTraits = (user: UserRow): Record<string, unknown> => ({
  user_id: user.id,
  user_email: user.email ?? "",
  user_phone: user.phone ?? ""
})

// A trait is data a caller chose to add; a key like these means a secret was about to be written to a table that
// admins page through, so it is left out rather than trusted.
const SECRET_KEY = /password|token|secret|nonce|otp|verifier|hash|code/i

const safeTraits = (traits: Readonly<Record<string, unknown>>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(traits).filter(([key]) => !SECRET_KEY.test(key)))

const isUserRow = (actor: UserRow | AuditActor): actor is UserRow => "is_sso_user" in actor

/** GoTrue's payload: the username is the phone when there is one, else the email; actor_name is full_name. */
const payloadOf = (action: AuditAction, record: AuditRecord): AuditPayload => {
  const { actor } = record
  const traits = record.traits === undefined ? undefined : safeTraits(record.traits)
  const base = isUserRow(actor)
    ? {
      actor_id: actor.id,
      actor_username: (actor.phone ?? "") !== "" ? actor.phone! : actor.email ?? "",
      ...(actor.raw_user_meta_data?.["full_name"] !== undefined ? { actor_name: actor.raw_user_meta_data["full_name"] } : {}),
      actor_via_sso: actor.is_sso_user
    }
    : { actor_id: actor.id, actor_username: actor.username, actor_via_sso: actor.viaSso ?? false }
  return { ...base, action, log_type: LOG_TYPES[action], ...(traits !== undefined ? { traits } : {}) }
}

/**
 * The audit log (GoTrue's audit_log_entries). A flow records an event inside the transaction that makes the change
 * when it has one, so the entry commits or rolls back with it; otherwise right after the change succeeded.
 *
 * Entry ids are UUIDv7-shaped and increase within a process (a counter breaks ties inside one millisecond), so
 * the events of one request, written in the same millisecond, still list newest first.
 *
 * ip_address is the client of the request being served, by the rule the rate limits count clients by: the first
 * value of RATE_LIMIT_HEADER when it is set and present, else the connection's peer. Empty outside a request.
 */
export class AuditLog extends Effect.Service<AuditLog>()("auth/AuditLog", {
  effect: Effect.gen(function*() {
    const client = yield* CurrentClient
    const repo = yield* AuditLogRepo
    const random = yield* SecureRandom
    // The last id's millisecond and counter. Advanced synchronously, inside the Effect.map that makes an id, so ids
    // increase in the order they are made whatever fibers make them.
    let last = { ms: 0, seq: 0 }
    // The address is the one the rate limits count (CurrentClient); empty outside a request.
    const currentClient = Effect.map(client.address, (address) => address ?? "")

    const nextId = (now: number): Effect.Effect<string> =>
      Effect.map(random.bytes(8), (bytes) => {
        const prev = last
        const { ms, seq } = last = now > prev.ms
          ? { ms: now, seq: 0 }
          : prev.seq < 0xfff ? { ms: prev.ms, seq: prev.seq + 1 } : { ms: prev.ms + 1, seq: 0 }
        // The UUID's last 62 bits are random: the variant (10) and 14 bits, then the 48-bit node.
        const variant = ((bytes[0]! & 0x3f) | 0x80).toString(16) + bytes[1]!.toString(16).padStart(2, "0")
        const node = bytes.subarray(2).toString("hex")
        const time = ms.toString(16).padStart(12, "0")
        return `${time.slice(0, 8)}-${time.slice(8)}-7${seq.toString(16).padStart(3, "0")}-${variant}-${node}`
      })

    /**
     * The rows recordAll would write, without writing them: for a statement that writes them together with the
     * change they record (the refresh grant's rotation). Ids taken for rows never written leave harmless gaps.
     */
    const entries = (events: ReadonlyArray<readonly [AuditAction, AuditRecord]>): Effect.Effect<ReadonlyArray<NewAuditLogEntry>> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.flatMap(currentClient, (address) =>
          Effect.forEach(events, ([action, record]) =>
            Effect.map(nextId(now), (id) => ({
              id,
              payload: payloadOf(action, record),
              createdAt: new Date(now),
              ipAddress: (record.ip ?? address).slice(0, 64)
            })))))

    /**
     * Writes entries in the order given, in one statement (each a round trip less on a token rotation); run it
     * inside the caller's transaction when the change has one.
     */
    const recordAll = traced("AuditLog.recordAll")(function*(
      events: ReadonlyArray<readonly [AuditAction, AuditRecord]>
    ): Effect.fn.Return<void> {
      yield* repo.insert(yield* entries(events))
    })

    /** Writes one entry; run it inside the caller's transaction when the change has one. */
    const record = (action: AuditAction, record: AuditRecord): Effect.Effect<void> => recordAll([[action, record]])

    return { record, recordAll, entries } as const
  }),
  dependencies: [AuditLogRepo.Default, CurrentClient.Default]
}) {}
