import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import type { OAuthClientChanges } from "../domain/OAuthClientRules.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** An oauth_clients row. GoTrue keeps the redirect URIs and grant types comma-joined. */
export interface OAuthClientRow {
  readonly id: string
  readonly client_secret_hash: string | null
  readonly registration_type: string
  readonly redirect_uris: string
  readonly grant_types: string
  readonly client_name: string | null
  readonly client_uri: string | null
  readonly logo_uri: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly deleted_at: Date | null
  readonly client_type: string
  readonly token_endpoint_auth_method: string
}

export interface OAuthAuthorizationRow {
  readonly id: string
  readonly authorization_id: string
  readonly client_id: string
  readonly user_id: string | null
  readonly redirect_uri: string
  readonly scope: string
  readonly state: string | null
  readonly resource: string | null
  readonly code_challenge: string | null
  readonly code_challenge_method: string | null
  readonly status: string
  readonly authorization_code: string | null
  readonly created_at: Date
  readonly expires_at: Date
  readonly approved_at: Date | null
  readonly nonce: string | null
}

export interface OAuthConsentRow {
  readonly id: string
  readonly user_id: string
  readonly client_id: string
  readonly scopes: string
  readonly granted_at: Date
  readonly revoked_at: Date | null
}

/** An active consent with its client, as the user's grants list it. */
export interface OAuthGrantRow {
  readonly client_id: string
  readonly scopes: string
  readonly granted_at: Date
  readonly client_name: string | null
  readonly client_uri: string | null
  readonly logo_uri: string | null
}

export interface NewOAuthClient {
  readonly id: string
  /** null for a public client: stored as "", as GoTrue does (its model scans the column into a plain string). */
  readonly secretHash: string | null
  readonly registrationType: "dynamic" | "manual"
  readonly redirectUris: ReadonlyArray<string>
  readonly grantTypes: ReadonlyArray<string>
  readonly clientName: string
  readonly clientUri: string
  readonly logoUri: string
  readonly clientType: string
  readonly method: string
  readonly now: Date
}

export interface NewOAuthAuthorization {
  readonly id: string
  readonly authorizationId: string
  readonly clientId: string
  readonly redirectUri: string
  readonly scope: string
  readonly state: string
  readonly resource: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  readonly nonce: string
  readonly now: Date
  readonly expiresAt: Date
}

const CLIENT_COLUMNS = [
  "id", "client_secret_hash", "registration_type", "redirect_uris", "grant_types", "client_name", "client_uri", "logo_uri",
  "created_at", "updated_at", "deleted_at", "client_type", "token_endpoint_auth_method"
] as const

const AUTHORIZATION_COLUMNS = [
  "id", "authorization_id", "client_id", "user_id", "redirect_uri", "scope", "state", "resource", "code_challenge",
  "code_challenge_method", "status", "authorization_code", "created_at", "expires_at", "approved_at", "nonce"
] as const

/** GoTrue writes an empty optional string as NULL (utilities.StringPtr). */
const orNull = (value: string): string | null => (value === "" ? null : value)

/**
 * GoTrue's OAuth server tables (migration 0020), in GoTrue's encodings so either server reads the other's rows:
 * clients (secret as its SHA-256, lists comma-joined), authorization requests (codes as they are, PKCE method lower
 * case), consents (scopes space-joined), and the sessions' oauth_client_id and scopes. Enum columns take the
 * values as untyped parameters, so the statements work on GoTrue's enum columns and on the text ones alike.
 */
export class OAuthServerRepo extends Effect.Service<OAuthServerRepo>()("auth/OAuthServerRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    const clientColumns = sql.unsafe(CLIENT_COLUMNS.map((c) => `c.${c}`).join(", "))
    const authorizationColumns = sql.unsafe(AUTHORIZATION_COLUMNS.map((c) => `a.${c}`).join(", "))

    const insertClient = traced("OAuthServerRepo.insertClient")(function*(client: NewOAuthClient) {
      const rows = yield* sql<OAuthClientRow>`INSERT INTO ${sql(t.oauth_clients)} AS c (id, client_secret_hash, registration_type,
          redirect_uris, grant_types, client_name, client_uri, logo_uri, created_at, updated_at, client_type, token_endpoint_auth_method)
        VALUES (${client.id}, ${client.secretHash ?? ""}, ${client.registrationType}, ${client.redirectUris.join(",")},
          ${client.grantTypes.join(",")}, ${orNull(client.clientName)}, ${orNull(client.clientUri)}, ${orNull(client.logoUri)},
          ${client.now}, ${client.now}, ${client.clientType}, ${client.method})
        RETURNING ${clientColumns}`
      return rows[0]!
    }, Effect.orDie)

    /** A client that is not deleted. */
    const findClient = traced("OAuthServerRepo.findClient")(function*(id: string) {
      const rows = yield* sql<OAuthClientRow>`SELECT ${clientColumns} FROM ${sql(t.oauth_clients)} c
        WHERE c.id = ${id} AND c.deleted_at IS NULL`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const listClients = traced("OAuthServerRepo.listClients")(function*(page: { readonly limit: number; readonly offset: number } | undefined) {
      const rows = page === undefined
        ? yield* sql<OAuthClientRow>`SELECT ${clientColumns} FROM ${sql(t.oauth_clients)} c
            WHERE c.deleted_at IS NULL ORDER BY c.created_at DESC, c.id`
        : yield* sql<OAuthClientRow>`SELECT ${clientColumns} FROM ${sql(t.oauth_clients)} c
            WHERE c.deleted_at IS NULL ORDER BY c.created_at DESC, c.id LIMIT ${page.limit} OFFSET ${page.offset}`
      const [count] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(t.oauth_clients)} WHERE deleted_at IS NULL`
      return { clients: rows, total: count?.n ?? 0 }
    }, Effect.orDie)

    const updateClient = traced("OAuthServerRepo.updateClient")(function*(id: string, changes: OAuthClientChanges, now: Date) {
      // A field left out keeps its value; "" clears a name or URI to NULL, as GoTrue's StringPtr does.
      const rows = yield* sql<OAuthClientRow>`UPDATE ${sql(t.oauth_clients)} AS c SET
          redirect_uris = COALESCE(${changes.redirectUris === undefined ? null : changes.redirectUris.join(",")}, c.redirect_uris),
          grant_types = COALESCE(${changes.grantTypes === undefined ? null : changes.grantTypes.join(",")}, c.grant_types),
          client_name = CASE WHEN ${changes.clientName !== undefined} THEN ${orNull(changes.clientName ?? "")} ELSE c.client_name END,
          client_uri = CASE WHEN ${changes.clientUri !== undefined} THEN ${orNull(changes.clientUri ?? "")} ELSE c.client_uri END,
          logo_uri = CASE WHEN ${changes.logoUri !== undefined} THEN ${orNull(changes.logoUri ?? "")} ELSE c.logo_uri END,
          token_endpoint_auth_method = COALESCE(${changes.tokenEndpointAuthMethod ?? null}, c.token_endpoint_auth_method),
          updated_at = ${now}
        WHERE c.id = ${id} AND c.deleted_at IS NULL
        RETURNING ${clientColumns}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const setClientSecret = traced("OAuthServerRepo.setClientSecret")(function*(id: string, hash: string, now: Date) {
      const rows = yield* sql<OAuthClientRow>`UPDATE ${sql(t.oauth_clients)} AS c SET client_secret_hash = ${hash}, updated_at = ${now}
        WHERE c.id = ${id} AND c.deleted_at IS NULL RETURNING ${clientColumns}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** Soft delete, as GoTrue: the client's consents and sessions stay. */
    const deleteClient = traced("OAuthServerRepo.deleteClient")(function*(id: string, now: Date) {
      yield* sql`UPDATE ${sql(t.oauth_clients)} SET deleted_at = ${now}, updated_at = ${now} WHERE id = ${id} AND deleted_at IS NULL`
    }, Effect.orDie)

    const insertAuthorization = traced("OAuthServerRepo.insertAuthorization")(function*(a: NewOAuthAuthorization) {
      yield* sql`INSERT INTO ${sql(t.oauth_authorizations)} (id, authorization_id, client_id, user_id, redirect_uri, scope, state,
          resource, code_challenge, code_challenge_method, response_type, status, created_at, expires_at, nonce)
        VALUES (${a.id}, ${a.authorizationId}, ${a.clientId}, NULL, ${a.redirectUri}, ${a.scope}, ${orNull(a.state)},
          ${orNull(a.resource)}, ${orNull(a.codeChallenge)}, ${orNull(a.codeChallengeMethod)}, 'code', 'pending', ${a.now},
          ${a.expiresAt}, ${orNull(a.nonce)})`
    }, Effect.orDie)

    /** The authorization locked until the transaction ends; one another transaction holds is not found (SKIP LOCKED). */
    const lockAuthorization = traced("OAuthServerRepo.lockAuthorization")(function*(authorizationId: string) {
      const rows = yield* sql<OAuthAuthorizationRow>`SELECT ${authorizationColumns} FROM ${sql(t.oauth_authorizations)} a
        WHERE a.authorization_id = ${authorizationId} FOR UPDATE SKIP LOCKED`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** The approved authorization holding `code`, unlocked (the exchange locks it again by id in its transaction). */
    const findByCode = traced("OAuthServerRepo.findByCode")(function*(code: string) {
      const rows = yield* sql<OAuthAuthorizationRow>`SELECT ${authorizationColumns} FROM ${sql(t.oauth_authorizations)} a
        WHERE a.authorization_code = ${code} AND a.status = 'approved'`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** Deletes the authorization (a code is used once); false when another exchange holds or took it. */
    const consumeAuthorization = traced("OAuthServerRepo.consumeAuthorization")(function*(id: string) {
      const rows = yield* sql`DELETE FROM ${sql(t.oauth_authorizations)} WHERE id IN (
          SELECT id FROM ${sql(t.oauth_authorizations)} WHERE id = ${id} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length === 1
    }, Effect.orDie)

    const markExpired = traced("OAuthServerRepo.markExpired")(function*(id: string) {
      yield* sql`UPDATE ${sql(t.oauth_authorizations)} SET status = 'expired' WHERE id = ${id}`
    }, Effect.orDie)

    const setAuthorizationUser = traced("OAuthServerRepo.setAuthorizationUser")(function*(id: string, userId: string) {
      yield* sql`UPDATE ${sql(t.oauth_authorizations)} SET user_id = ${userId} WHERE id = ${id}`
    }, Effect.orDie)

    const approve = traced("OAuthServerRepo.approve")(function*(id: string, code: string, now: Date) {
      yield* sql`UPDATE ${sql(t.oauth_authorizations)} SET status = 'approved', approved_at = ${now}, authorization_code = ${code}
        WHERE id = ${id}`
    }, Effect.orDie)

    const deny = traced("OAuthServerRepo.deny")(function*(id: string) {
      yield* sql`UPDATE ${sql(t.oauth_authorizations)} SET status = 'denied' WHERE id = ${id}`
    }, Effect.orDie)

    /** Marks pending requests past their expiry, and deletes unused ones a day past it; how many rows it touched. */
    const sweepAuthorizations = traced("OAuthServerRepo.sweepAuthorizations")(function*(now: Date, limit: number) {
      const dayBefore = new Date(now.getTime() - 86_400_000)
      const expired = yield* sql`UPDATE ${sql(t.oauth_authorizations)} SET status = 'expired' WHERE id IN (
          SELECT id FROM ${sql(t.oauth_authorizations)} WHERE status = 'pending' AND expires_at < ${now}
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      const deleted = yield* sql`DELETE FROM ${sql(t.oauth_authorizations)} WHERE id IN (
          SELECT id FROM ${sql(t.oauth_authorizations)} WHERE expires_at < ${dayBefore} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return expired.length + deleted.length
    }, Effect.orDie)

    const activeConsent = traced("OAuthServerRepo.activeConsent")(function*(userId: string, clientId: string) {
      const rows = yield* sql<OAuthConsentRow>`SELECT id, user_id, client_id, scopes, granted_at, revoked_at
        FROM ${sql(t.oauth_consents)} WHERE user_id = ${userId} AND client_id = ${clientId} AND revoked_at IS NULL`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /** GoTrue's UpsertOAuthServerConsent: the scopes replaced, granted now, no longer revoked. */
    const upsertConsent = traced("OAuthServerRepo.upsertConsent")(function*(id: string, userId: string, clientId: string, scopes: string, now: Date) {
      yield* sql`INSERT INTO ${sql(t.oauth_consents)} (id, user_id, client_id, scopes, granted_at)
        VALUES (${id}, ${userId}, ${clientId}, ${scopes}, ${now})
        ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = EXCLUDED.scopes, granted_at = EXCLUDED.granted_at, revoked_at = NULL`
    }, Effect.orDie)

    /** The user's active consents, newest first, with their (not deleted) clients. */
    const grantsOf = traced("OAuthServerRepo.grantsOf")(function*(userId: string) {
      return yield* sql<OAuthGrantRow>`SELECT o.client_id, o.scopes, o.granted_at, c.client_name, c.client_uri, c.logo_uri
        FROM ${sql(t.oauth_consents)} o JOIN ${sql(t.oauth_clients)} c ON c.id = o.client_id AND c.deleted_at IS NULL
        WHERE o.user_id = ${userId} AND o.revoked_at IS NULL ORDER BY o.granted_at DESC`
    }, Effect.orDie)

    /**
     * Revokes the user's consent to a client, ends the sessions started for that client, and deletes the user's
     * requests to it still in flight (codes approved but not exchanged, requests the user opened), so no code
     * outlives the grant; false when none was active.
     */
    const revokeConsent = traced("OAuthServerRepo.revokeConsent")(function*(userId: string, clientId: string, now: Date) {
      const rows = yield* sql`UPDATE ${sql(t.oauth_consents)} SET revoked_at = ${now}
        WHERE user_id = ${userId} AND client_id = ${clientId} AND revoked_at IS NULL RETURNING 1`
      if (rows.length === 0) return false
      yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} AND oauth_client_id = ${clientId}`
      yield* sql`DELETE FROM ${sql(t.oauth_authorizations)}
        WHERE user_id = ${userId} AND client_id = ${clientId} AND status IN ('approved', 'pending')`
      return true
    }, Effect.orDie)

    return {
      insertClient, findClient, listClients, updateClient, setClientSecret, deleteClient,
      insertAuthorization, lockAuthorization, findByCode, consumeAuthorization, markExpired, setAuthorizationUser, approve, deny,
      sweepAuthorizations, activeConsent, upsertConsent, grantsOf, revokeConsent
    } as const
  })
}) {}
