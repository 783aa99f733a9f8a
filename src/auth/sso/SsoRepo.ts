import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { claimOnce, deleteExpiredClaims } from "../../platform/sql/UsedOnce.js"
import { authTables } from "../AuthTables.js"
import type { SamlAttributeMapping } from "../domain/SamlAssertion.js"
import { traced } from "../../platform/Traced.js"

/** An SSO provider with its SAML connection and domains (GoTrue's SSOProvider with SAMLProvider and SSODomains). */
export interface SsoProviderRow {
  readonly id: string
  readonly resource_id: string | null
  readonly disabled: boolean | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly entity_id: string
  readonly metadata_xml: string
  readonly metadata_url: string | null
  readonly attribute_mapping: SamlAttributeMapping | null
  readonly name_id_format: string | null
  readonly saml_updated_at: Date
  readonly domains: ReadonlyArray<{ readonly domain: string }>
}

export interface NewSsoProvider {
  readonly id: string
  readonly samlId: string
  readonly resourceId: string | null
  readonly disabled: boolean | null
  readonly entityId: string
  readonly metadataXml: string
  readonly metadataUrl: string | null
  readonly attributeMapping: SamlAttributeMapping
  readonly nameIdFormat: string | null
  readonly domains: ReadonlyArray<{ readonly id: string; readonly domain: string }>
  readonly now: Date
}

export interface SsoProviderChange {
  readonly resourceId?: string | null
  readonly disabled?: boolean | null
  readonly metadata?: { readonly xml: string; readonly url: string | null }
  readonly attributeMapping?: SamlAttributeMapping
  readonly nameIdFormat: string | null
  /** The complete new set, when sent. */
  readonly domains?: ReadonlyArray<{ readonly id: string; readonly domain: string }>
  readonly now: Date
}

export interface RelayState {
  readonly id: string
  readonly sso_provider_id: string
  readonly request_id: string
  readonly redirect_to: string
  readonly flow_state_id: string | null
  readonly created_at: Date
}

/**
 * GoTrue's SSO tables (migration 0021) and Gatehouse's saml_used_assertions (0022). GoTrue scans the timestamps,
 * entity_id, metadata_xml, request_id and redirect_to into non-pointer Go values, and attribute_mapping through a
 * Scan that fails on NULL, so none of them is ever written NULL.
 */
export class SsoRepo extends Effect.Service<SsoRepo>()("auth/SsoRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const select = sql`SELECT p.id, p.resource_id, p.disabled, p.created_at, p.updated_at,
        s.entity_id, s.metadata_xml, s.metadata_url, s.attribute_mapping, s.name_id_format,
        COALESCE(s.updated_at, p.updated_at) AS saml_updated_at,
        COALESCE((SELECT json_agg(json_build_object('domain', d.domain) ORDER BY d.created_at, d.domain)
          FROM ${sql(t.sso_domains)} d WHERE d.sso_provider_id = p.id), '[]'::json) AS domains
      FROM ${sql(t.sso_providers)} p JOIN ${sql(t.saml_providers)} s ON s.sso_provider_id = p.id`

    const normalize = (row: SsoProviderRow): SsoProviderRow => ({
      ...row,
      domains: typeof row.domains === "string" ? JSON.parse(row.domains) : row.domains,
      attribute_mapping: typeof row.attribute_mapping === "string" ? JSON.parse(row.attribute_mapping) : row.attribute_mapping
    })
    const one = (rows: ReadonlyArray<SsoProviderRow>) => Option.map(Option.fromNullable(rows[0]), normalize)

    const findById = traced("SsoRepo.findById")(function*(id: string) {
      return one(yield* sql<SsoProviderRow>`${select} WHERE p.id = ${id}`)
    }, Effect.orDie)

    const findByResourceId = traced("SsoRepo.findByResourceId")(function*(resourceId: string) {
      return one(yield* sql<SsoProviderRow>`${select} WHERE lower(p.resource_id) = lower(${resourceId})`)
    }, Effect.orDie)

    const findByDomain = traced("SsoRepo.findByDomain")(function*(domain: string) {
      return one(yield* sql<SsoProviderRow>`${select}
        WHERE p.id = (SELECT sso_provider_id FROM ${sql(t.sso_domains)} WHERE domain = ${domain} LIMIT 1)`)
    }, Effect.orDie)

    const findByEntityId = traced("SsoRepo.findByEntityId")(function*(entityId: string) {
      return one(yield* sql<SsoProviderRow>`${select} WHERE s.entity_id = ${entityId}`)
    }, Effect.orDie)

    const list = traced("SsoRepo.list")(function*(filter: { readonly resourceId?: string; readonly resourceIdPrefix?: string }) {
      const rows = filter.resourceId !== undefined
        ? yield* sql<SsoProviderRow>`${select} WHERE lower(p.resource_id) = lower(${filter.resourceId}) ORDER BY p.created_at, p.id`
        : filter.resourceIdPrefix !== undefined
        ? yield* sql<SsoProviderRow>`${select} WHERE p.resource_id LIKE ${`${filter.resourceIdPrefix.replace(/[\\%_]/g, "\\$&")}%`} ORDER BY p.created_at, p.id`
        : yield* sql<SsoProviderRow>`${select} ORDER BY p.created_at, p.id`
      return rows.map(normalize)
    }, Effect.orDie)

    /** Which provider holds each of these domains (case-insensitively, as the unique index compares them). */
    const domainOwners = traced("SsoRepo.domainOwners")(function*(domains: ReadonlyArray<string>) {
      if (domains.length === 0) return [] as ReadonlyArray<{ readonly domain: string; readonly sso_provider_id: string }>
      return yield* sql<{ readonly domain: string; readonly sso_provider_id: string }>`SELECT lower(domain) AS domain, sso_provider_id
        FROM ${sql(t.sso_domains)} WHERE lower(domain) IN ${sql.in(domains.map((domain) => domain.toLowerCase()))}`
    }, Effect.orDie)

    const insertDomains = (providerId: string, domains: ReadonlyArray<{ readonly id: string; readonly domain: string }>, now: Date) =>
      domains.length === 0 ? Effect.void : sql`INSERT INTO ${sql(t.sso_domains)} ${
        sql.insert(domains.map((domain) => ({ id: domain.id, sso_provider_id: providerId, domain: domain.domain, created_at: now, updated_at: now })))
      }`

    /** Inserts a provider, its SAML connection and its domains (in the caller's transaction). */
    const insert = traced("SsoRepo.insert")(function*(provider: NewSsoProvider) {
      yield* sql`INSERT INTO ${sql(t.sso_providers)} ${sql.insert({
        id: provider.id,
        resource_id: provider.resourceId,
        disabled: provider.disabled,
        created_at: provider.now,
        updated_at: provider.now
      })}`
      yield* sql`INSERT INTO ${sql(t.saml_providers)} ${sql.insert({
        id: provider.samlId,
        sso_provider_id: provider.id,
        entity_id: provider.entityId,
        metadata_xml: provider.metadataXml,
        metadata_url: provider.metadataUrl,
        attribute_mapping: sql.json(provider.attributeMapping),
        name_id_format: provider.nameIdFormat,
        created_at: provider.now,
        updated_at: provider.now
      })}`
      yield* insertDomains(provider.id, provider.domains, provider.now)
    })

    /** Applies an admin PUT (in the caller's transaction). */
    const update = traced("SsoRepo.update")(function*(id: string, change: SsoProviderChange) {
      const provider: Record<string, unknown> = { updated_at: change.now }
      if (change.resourceId !== undefined) provider["resource_id"] = change.resourceId
      if (change.disabled !== undefined) provider["disabled"] = change.disabled
      yield* sql`UPDATE ${sql(t.sso_providers)} SET ${sql.update(provider)} WHERE id = ${id}`
      const saml: Record<string, unknown> = { updated_at: change.now, name_id_format: change.nameIdFormat }
      if (change.metadata !== undefined) {
        saml["metadata_xml"] = change.metadata.xml
        saml["metadata_url"] = change.metadata.url
      }
      if (change.attributeMapping !== undefined) saml["attribute_mapping"] = sql.json(change.attributeMapping)
      yield* sql`UPDATE ${sql(t.saml_providers)} SET ${sql.update(saml)} WHERE sso_provider_id = ${id}`
      if (change.domains !== undefined) {
        yield* sql`DELETE FROM ${sql(t.sso_domains)} WHERE sso_provider_id = ${id}`
        yield* insertDomains(id, change.domains, change.now)
      }
    })

    /** Metadata refreshed from metadata_url. */
    const refreshMetadata = traced("SsoRepo.refreshMetadata")(function*(id: string, xml: string, now: Date) {
      yield* sql`UPDATE ${sql(t.saml_providers)} SET metadata_xml = ${xml}, updated_at = ${now} WHERE sso_provider_id = ${id}`
    }, Effect.orDie)

    const remove = traced("SsoRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM ${sql(t.sso_providers)} WHERE id = ${id}`
    }, Effect.orDie)

    const insertRelayState = traced("SsoRepo.insertRelayState")(function*(relay: RelayState) {
      yield* sql`INSERT INTO ${sql(t.saml_relay_states)} ${sql.insert({
        id: relay.id,
        sso_provider_id: relay.sso_provider_id,
        request_id: relay.request_id,
        redirect_to: relay.redirect_to,
        flow_state_id: relay.flow_state_id,
        created_at: relay.created_at,
        updated_at: relay.created_at
      })}`
    })

    /** Takes a relay state: deleted as it is read, so of two posts with one RelayState only one gets it. */
    const takeRelayState = traced("SsoRepo.takeRelayState")(function*(id: string) {
      const rows = yield* sql<RelayState>`DELETE FROM ${sql(t.saml_relay_states)} WHERE id = ${id}
        RETURNING id, sso_provider_id, request_id, COALESCE(redirect_to, '') AS redirect_to, flow_state_id, created_at`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /**
     * Claims a verified assertion's digest until `expiresAt`: true for the first claim, false when it was claimed
     * before by any instance (an expired record is taken over). Run in the sign-in's transaction.
     */
    const claimAssertion = traced("SsoRepo.claimAssertion")((digest: Uint8Array, expiresAt: Date) =>
      claimOnce(sql, t.saml_used_assertions, digest, expiresAt), Effect.orDie)

    /** The SSO identities of one provider whose email is this address (lowercased, as the generated column). */
    const identityOwnersByEmail = traced("SsoRepo.identityOwnersByEmail")(function*(provider: string, email: string) {
      const rows = yield* sql<{ readonly user_id: string }>`SELECT DISTINCT user_id FROM ${sql(t.identities)}
        WHERE provider = ${provider} AND email = ${email.toLowerCase()}`
      return rows.map((row) => row.user_id)
    }, Effect.orDie)

    /** Deletes up to `limit` expired used-assertion records and relay states older than `relayBefore`. */
    const sweep = traced("SsoRepo.sweep")(function*(now: Date, relayBefore: Date, limit: number) {
      const assertions = yield* deleteExpiredClaims(sql, t.saml_used_assertions, now, limit)
      const relays = yield* sql`DELETE FROM ${sql(t.saml_relay_states)} WHERE id IN (
          SELECT id FROM ${sql(t.saml_relay_states)} WHERE created_at < ${relayBefore} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return assertions + relays.length
    }, Effect.orDie)

    /** The flow_state row every POST /sso starts (GoTrue: always; the PKCE columns only with PKCE). */
    const insertFlow = traced("SsoRepo.insertFlow")(function*(flow: {
      readonly id: string
      readonly pkce: { readonly challenge: string; readonly method: string; readonly authCode: string } | null
      readonly referrer: string
      readonly now: Date
    }) {
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: null,
        auth_code: flow.pkce?.authCode ?? null,
        code_challenge_method: flow.pkce?.method ?? null,
        code_challenge: flow.pkce?.challenge ?? null,
        provider_type: "sso/saml",
        provider_access_token: "",
        provider_refresh_token: "",
        authentication_method: "sso/saml",
        referrer: flow.referrer,
        created_at: flow.now,
        updated_at: flow.now
      })}`
    })

    /**
     * Hands a PKCE flow to its user, once (in the sign-in's transaction, the row locked): "used" when it already
     * has one, "none" when the flow is gone or has no auth code, else its auth code.
     */
    const claimFlow = traced("SsoRepo.claimFlow")(function*(id: string, userId: string, now: Date) {
      const [flow] = yield* sql<{ readonly user_id: string | null; readonly auth_code: string | null }>`
        SELECT user_id, auth_code FROM ${sql(t.flow_state)} WHERE id = ${id} FOR UPDATE`
      if (flow === undefined || flow.auth_code === null) return { _tag: "None" } as const
      if (flow.user_id !== null) return { _tag: "Used" } as const
      yield* sql`UPDATE ${sql(t.flow_state)} SET user_id = ${userId}, auth_code_issued_at = ${now}, updated_at = ${now} WHERE id = ${id}`
      return { _tag: "Claimed", authCode: flow.auth_code } as const
    })

    return {
      insertFlow, claimFlow,
      findById, findByResourceId, findByDomain, findByEntityId, list, domainOwners, insert, update, refreshMetadata, remove,
      insertRelayState, takeRelayState, claimAssertion, identityOwnersByEmail, sweep
    } as const
  })
}) {}
