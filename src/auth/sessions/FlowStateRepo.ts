import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { ChallengeMethod } from "../domain/Pkce.js"
import { traced } from "../../platform/Traced.js"

/** A flow_state row an app can exchange at /token?grant_type=pkce (an email flow's, or an OAuth flow's after its callback). */
export interface FlowState {
  readonly id: string
  readonly user_id: string | null
  readonly auth_code: string
  readonly code_challenge_method: ChallengeMethod
  readonly code_challenge: string
  readonly authentication_method: string
  readonly provider_type: string
  /** The provider's tokens of an OAuth flow, handed to the app with the session. */
  readonly provider_access_token: string | null
  readonly provider_refresh_token: string | null
  readonly created_at: Date
}

export interface NewFlowState {
  readonly id: string
  readonly userId: string
  readonly authCode: string
  readonly challenge: string
  readonly method: ChallengeMethod
  readonly authenticationMethod: string
  readonly now: Date
}

/** The row an external-provider sign-in starts (GET /authorize): its id is the `state` the provider hands back. */
export interface OAuthFlowStart {
  readonly id: string
  readonly providerType: string
  /** The app's PKCE challenge (and the auth code it will get) when it asked for the PKCE flow. */
  readonly pkce: { readonly challenge: string; readonly method: ChallengeMethod; readonly authCode: string } | null
  /** Where to send the browser afterwards, already checked against the allow-list. */
  readonly referrer: string
  /** The PKCE verifier towards the provider, kept in oauth_client_states as GoTrue keeps it. */
  readonly providerCodeVerifier: string | null
  /** What an OAuth 1.0a provider's callback names the flow by (its request token), kept in oauth_client_states too. */
  readonly providerRequestToken?: string | null
  /** Manual linking: the signed-in user the provider's identity is to be added to. */
  readonly linkingTargetId?: string | null
  /** The digest of the starting browser's binding cookie; null when browser binding is off, or not yet known. */
  readonly browserBinding?: string | null
  /**
   * A linking flow started by an API call, which cannot set the browser's cookie: the provider URL it waits to send
   * its browser to, once that browser has bound it (bindPendingOAuth).
   */
  readonly pendingAuthorizeUrl?: string | null
  readonly now: Date
}

/** What claiming a started OAuth flow found. */
export type ClaimedOAuth =
  | { readonly _tag: "Claimed"; readonly flow: OAuthFlow }
  /** No such started flow: never started, already claimed, or not an OAuth flow. */
  | { readonly _tag: "Unknown" }
  /** Started, but bound to another browser (or to none yet): left in place for its own browser. */
  | { readonly _tag: "OtherBrowser" }

/** A claimed OAuth flow: what /callback needs to finish it. */
export interface OAuthFlow {
  readonly id: string
  readonly provider_type: string
  readonly auth_code: string | null
  readonly code_challenge: string | null
  readonly code_challenge_method: ChallengeMethod | null
  readonly referrer: string | null
  readonly provider_code_verifier: string | null
  /** The user a manual-linking flow adds the identity to; null for a sign-in. */
  readonly linking_target_id: string | null
  readonly created_at: Date
}

/** The flow an app exchanges at /token?grant_type=pkce once the provider has signed the user in. */
export interface OAuthCodeFlow {
  readonly id: string
  readonly userId: string
  readonly providerType: string
  readonly authCode: string
  readonly challenge: string
  readonly method: ChallengeMethod
  readonly providerAccessToken: string
  readonly providerRefreshToken: string | null
  /** The start's created_at: GoTrue measures the expiry from the start of the whole flow. */
  readonly createdAt: Date
  readonly now: Date
}

export interface FlowStateRepoShape {
  readonly insert: (flow: NewFlowState) => Effect.Effect<void>
  /** The user's most recent flow for `authenticationMethod`: the one a PKCE link's redirect hands the code of. */
  readonly latestFor: (userId: string, authenticationMethod: string) => Effect.Effect<Option.Option<FlowState>>
  /** A flow with a user (an OAuth flow has one only after its callback), by the auth code the app exchanges. */
  readonly findByAuthCode: (authCode: string) => Effect.Effect<Option.Option<FlowState>>
  /** Deletes the flow; false when another request deleted it first, so an auth code is exchanged once. */
  readonly take: (id: string) => Effect.Effect<boolean>
  readonly startOAuth: (flow: OAuthFlowStart) => Effect.Effect<void>
  /**
   * Deletes a started OAuth flow (and its provider verifier) and returns it: a state is claimed by one callback
   * only, so a replayed or concurrent callback finds nothing. With `browserBinding` (a digest) only the flow bound to
   * it is claimed; a flow bound to another browser stays, so a stranger's callback cannot spend it.
   */
  readonly claimOAuth: (id: string, browserBinding?: string) => Effect.Effect<ClaimedOAuth>
  /**
   * Binds a linking flow that waits for its browser (pendingAuthorizeUrl) to that browser's binding digest, once:
   * the provider URL to send the browser on to, and when the flow started; None when there is no such waiting flow.
   */
  readonly bindPendingOAuth: (id: string, browserBinding: string) => Effect.Effect<Option.Option<{ readonly authorizeUrl: string; readonly createdAt: Date }>>
  /** The id of the started OAuth flow an OAuth 1.0a provider's request token belongs to. */
  readonly findOAuthByRequestToken: (requestToken: string) => Effect.Effect<Option.Option<string>>
  readonly insertOAuthCode: (flow: OAuthCodeFlow) => Effect.Effect<void>
  /**
   * Deletes up to `limit` flow_state rows and up to `limit` oauth_client_states rows made before `before`; what it
   * deleted of each. Rows another transaction holds are skipped, for a later sweep.
   */
  readonly sweep: (before: Date, limit: number) => Effect.Effect<SweptFlows>
}

/** What one sweep deleted. */
export interface SweptFlows {
  readonly flows: number
  readonly clientStates: number
}

/** A started OAuth flow as FlowStateRepo.Test keeps it. */
interface StartedRow {
  readonly flow: OAuthFlow
  readonly binding: string | null
  readonly pendingUrl: string | null
}

/** The flow_state table (migration 0004). It sits by the sessions because every flow ends in one. */
export class FlowStateRepo extends Effect.Service<FlowStateRepo>()("auth/FlowStateRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    // GoTrue scans both provider tokens into plain strings, so "" (never NULL) is written for none; read back as null.
    const columns = sql`id, user_id, auth_code, code_challenge_method, code_challenge, authentication_method, provider_type,
      NULLIF(provider_access_token, '') AS provider_access_token, NULLIF(provider_refresh_token, '') AS provider_refresh_token,
      created_at`

    const insert = traced("FlowStateRepo.insert")(function*(flow: NewFlowState) {
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: flow.userId,
        auth_code: flow.authCode,
        code_challenge_method: flow.method,
        code_challenge: flow.challenge,
        provider_type: "email",
        provider_access_token: "",
        provider_refresh_token: "",
        authentication_method: flow.authenticationMethod,
        created_at: flow.now,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    const latestFor = traced("FlowStateRepo.latestFor")(function*(userId: string, authenticationMethod: string) {
      const rows = yield* sql<FlowState>`SELECT ${columns} FROM ${sql(t.flow_state)}
        WHERE user_id = ${userId} AND authentication_method = ${authenticationMethod}
        ORDER BY created_at DESC LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByAuthCode = traced("FlowStateRepo.findByAuthCode")(function*(authCode: string) {
      const rows = yield* sql<FlowState>`SELECT ${columns} FROM ${sql(t.flow_state)} WHERE auth_code = ${authCode} AND user_id IS NOT NULL LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const take = traced("FlowStateRepo.take")(function*(id: string) {
      const rows = yield* sql`DELETE FROM ${sql(t.flow_state)} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    const startOAuth = traced("FlowStateRepo.startOAuth")(function*(flow: OAuthFlowStart) {
      const requestToken = flow.providerRequestToken ?? null
      const clientStateId = flow.providerCodeVerifier === null && requestToken === null ? null : flow.id
      if (clientStateId !== null) {
        yield* sql`INSERT INTO ${sql(t.oauth_client_states)} ${sql.insert({
          id: clientStateId,
          provider_type: flow.providerType,
          code_verifier: flow.providerCodeVerifier,
          created_at: flow.now,
          ...(requestToken === null ? {} : { request_token: requestToken })
        })}`
      }
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: null,
        auth_code: flow.pkce?.authCode ?? null,
        code_challenge_method: flow.pkce?.method ?? null,
        code_challenge: flow.pkce?.challenge ?? null,
        provider_type: flow.providerType,
        provider_access_token: "",
        provider_refresh_token: "",
        authentication_method: "oauth",
        referrer: flow.referrer,
        oauth_client_state_id: clientStateId,
        linking_target_id: flow.linkingTargetId ?? null,
        browser_binding: flow.browserBinding ?? null,
        provider_authorize_url: flow.pendingAuthorizeUrl ?? null,
        created_at: flow.now,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    // One statement: `started` sees the flow whatever its binding, so a refusal can say why; only a flow whose
    // binding matches is deleted. A concurrent claim that won the row leaves `flow` empty with a matching binding:
    // Unknown, as a replay is.
    const claimOAuth = traced("FlowStateRepo.claimOAuth")(function*(id: string, browserBinding?: string) {
      const binding = browserBinding ?? null
      const rows = yield* sql<OAuthFlow & { readonly other_browser: boolean; readonly claimed: string | null }>`WITH started AS (
          SELECT id, (${binding}::text IS NOT NULL AND browser_binding IS DISTINCT FROM ${binding}::text) AS other_browser
          FROM ${sql(t.flow_state)} WHERE id = ${id} AND user_id IS NULL AND authentication_method = 'oauth'
        ), flow AS (
          DELETE FROM ${sql(t.flow_state)} WHERE id IN (SELECT id FROM started WHERE NOT other_browser)
          RETURNING id, provider_type, auth_code, code_challenge, code_challenge_method, referrer, oauth_client_state_id,
            linking_target_id, created_at
        ), client AS (
          DELETE FROM ${sql(t.oauth_client_states)} WHERE id IN (SELECT oauth_client_state_id FROM flow) RETURNING id, code_verifier
        )
        SELECT started.other_browser, flow.id AS claimed, flow.id, flow.provider_type, flow.auth_code, flow.code_challenge,
          flow.code_challenge_method, flow.referrer, client.code_verifier AS provider_code_verifier, flow.linking_target_id,
          flow.created_at
        FROM started LEFT JOIN flow ON flow.id = started.id LEFT JOIN client ON client.id = flow.oauth_client_state_id`
      const row = rows[0]
      if (row === undefined) return { _tag: "Unknown" } as ClaimedOAuth
      if (row.other_browser) return { _tag: "OtherBrowser" } as ClaimedOAuth
      if (row.claimed === null) return { _tag: "Unknown" } as ClaimedOAuth
      const { claimed: _claimed, other_browser: _other, ...flow } = row
      return { _tag: "Claimed", flow } as ClaimedOAuth
    }, Effect.orDie)

    const bindPendingOAuth = traced("FlowStateRepo.bindPendingOAuth")(function*(id: string, browserBinding: string) {
      const rows = yield* sql<{ provider_authorize_url: string; created_at: Date }>`
        UPDATE ${sql(t.flow_state)} SET browser_binding = ${browserBinding}
        WHERE id = ${id} AND user_id IS NULL AND authentication_method = 'oauth' AND provider_authorize_url IS NOT NULL
          AND browser_binding IS NULL
        RETURNING provider_authorize_url, created_at`
      return Option.map(Option.fromNullable(rows[0]), (row) => ({ authorizeUrl: row.provider_authorize_url, createdAt: row.created_at }))
    }, Effect.orDie)

    const findOAuthByRequestToken = traced("FlowStateRepo.findOAuthByRequestToken")(function*(requestToken: string) {
      const rows = yield* sql<{ id: string }>`SELECT flow.id FROM ${sql(t.flow_state)} flow
        JOIN ${sql(t.oauth_client_states)} client ON client.id = flow.oauth_client_state_id
        WHERE client.request_token = ${requestToken} AND flow.user_id IS NULL AND flow.authentication_method = 'oauth'`
      return Option.map(Option.fromNullable(rows[0]), (row) => row.id)
    }, Effect.orDie)

    const insertOAuthCode = traced("FlowStateRepo.insertOAuthCode")(function*(flow: OAuthCodeFlow) {
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: flow.userId,
        auth_code: flow.authCode,
        code_challenge_method: flow.method,
        code_challenge: flow.challenge,
        provider_type: flow.providerType,
        provider_access_token: flow.providerAccessToken,
        provider_refresh_token: flow.providerRefreshToken ?? "",
        authentication_method: "oauth",
        auth_code_issued_at: flow.now,
        created_at: flow.createdAt,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    // SKIP LOCKED, as GoTrue's cleanup: a row a request is claiming right now is left to it, and the sweep never waits.
    const sweep = traced("FlowStateRepo.sweep")(function*(before: Date, limit: number) {
      const [row] = yield* sql<{ readonly flows: number; readonly client_states: number }>`WITH flows AS (
          DELETE FROM ${sql(t.flow_state)} WHERE id IN (
            SELECT id FROM ${sql(t.flow_state)} WHERE created_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        ), client_states AS (
          DELETE FROM ${sql(t.oauth_client_states)} WHERE id IN (
            SELECT id FROM ${sql(t.oauth_client_states)} WHERE created_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        )
        SELECT (SELECT count(*) FROM flows)::int AS flows, (SELECT count(*) FROM client_states)::int AS client_states`
      return { flows: row?.flows ?? 0, clientStates: row?.client_states ?? 0 }
    }, Effect.orDie)

    return {
      insert,
      latestFor,
      findByAuthCode,
      take,
      startOAuth,
      claimOAuth,
      bindPendingOAuth,
      findOAuthByRequestToken,
      insertOAuthCode,
      sweep
    } satisfies FlowStateRepoShape
  })
}) {
  static readonly Test: Layer.Layer<FlowStateRepo> = Layer.effect(
    FlowStateRepo,
    Effect.map(
      Effect.all([
        Ref.make<ReadonlyArray<FlowState>>([]),
        Ref.make<ReadonlyArray<StartedRow>>([]),
        Ref.make(new Map<string, string>())
      ]),
      ([rows, started, requestTokens]) =>
        FlowStateRepo.make({
          insert: (flow) =>
            Ref.update(rows, (all) => [...all, {
              id: flow.id,
              user_id: flow.userId,
              auth_code: flow.authCode,
              code_challenge_method: flow.method,
              code_challenge: flow.challenge,
              authentication_method: flow.authenticationMethod,
              provider_type: "email",
              provider_access_token: null,
              provider_refresh_token: null,
              created_at: flow.now
            }]),
          latestFor: (userId, authenticationMethod) =>
            Effect.map(Ref.get(rows), (all) =>
              Option.fromNullable(
                all
                  .filter((row) => row.user_id === userId && row.authentication_method === authenticationMethod)
                  .reduce<FlowState | undefined>((latest, row) => latest === undefined || row.created_at >= latest.created_at ? row : latest, undefined)
              )),
          findByAuthCode: (authCode) => Effect.map(Ref.get(rows), (all) => Option.fromNullable(all.find((row) => row.auth_code === authCode))),
          take: (id) => Ref.modify(rows, (all) => [all.some((row) => row.id === id), all.filter((row) => row.id !== id)]),
          startOAuth: (flow) =>
            Effect.zipRight(
              Ref.update(requestTokens, (map) => flow.providerRequestToken == null ? map : new Map(map).set(flow.providerRequestToken, flow.id)),
              Ref.update(started, (all) => [...all, {
                flow: {
                  id: flow.id,
                  provider_type: flow.providerType,
                  auth_code: flow.pkce?.authCode ?? null,
                  code_challenge: flow.pkce?.challenge ?? null,
                  code_challenge_method: flow.pkce?.method ?? null,
                  referrer: flow.referrer,
                  provider_code_verifier: flow.providerCodeVerifier,
                  linking_target_id: flow.linkingTargetId ?? null,
                  created_at: flow.now
                },
                binding: flow.browserBinding ?? null,
                pendingUrl: flow.pendingAuthorizeUrl ?? null
              }])
            ),
          claimOAuth: (id, browserBinding) =>
            Ref.modify(started, (all): readonly [ClaimedOAuth, ReadonlyArray<StartedRow>] => {
              const found = all.find((row) => row.flow.id === id)
              if (found === undefined) return [{ _tag: "Unknown" }, all]
              if (browserBinding !== undefined && found.binding !== browserBinding) return [{ _tag: "OtherBrowser" }, all]
              return [{ _tag: "Claimed", flow: found.flow }, all.filter((row) => row !== found)]
            }),
          bindPendingOAuth: (id, browserBinding) =>
            Ref.modify(started, (all): readonly [Option.Option<{ readonly authorizeUrl: string; readonly createdAt: Date }>, ReadonlyArray<StartedRow>] => {
              const found = all.find((row) => row.flow.id === id && row.binding === null && row.pendingUrl !== null)
              if (found === undefined) return [Option.none(), all]
              return [
                Option.some({ authorizeUrl: found.pendingUrl!, createdAt: found.flow.created_at }),
                all.map((row) => (row === found ? { ...row, binding: browserBinding } : row))
              ]
            }),
          findOAuthByRequestToken: (requestToken) =>
            Effect.map(Effect.all([Ref.get(requestTokens), Ref.get(started)]), ([map, all]) =>
              Option.filter(Option.fromNullable(map.get(requestToken)), (id) => all.some((row) => row.flow.id === id))),
          insertOAuthCode: (flow) =>
            Ref.update(rows, (all) => [...all, {
              id: flow.id,
              user_id: flow.userId,
              auth_code: flow.authCode,
              code_challenge_method: flow.method,
              code_challenge: flow.challenge,
              authentication_method: "oauth",
              provider_type: flow.providerType,
              provider_access_token: flow.providerAccessToken,
              provider_refresh_token: flow.providerRefreshToken,
              created_at: flow.createdAt
            }]),
          sweep: (before, limit) =>
            Effect.gen(function*() {
              const flows = (yield* Ref.get(rows)).filter((row) => row.created_at < before).slice(0, limit)
              // A started flow is kept here with its client state, which it has when it holds a provider verifier or
              // request token: both go together, as within the limit they do in SQL.
              const starts = (yield* Ref.get(started)).filter((row) => row.flow.created_at < before).slice(0, limit - flows.length)
              const tokens = yield* Ref.get(requestTokens)
              const withClientState = starts.filter((row) =>
                row.flow.provider_code_verifier !== null || [...tokens.values()].includes(row.flow.id))
              yield* Ref.update(rows, (all) => all.filter((row) => !flows.includes(row)))
              yield* Ref.update(started, (all) => all.filter((row) => !starts.includes(row)))
              yield* Ref.update(requestTokens, (map) => new Map([...map].filter(([, id]) => !starts.some((row) => row.flow.id === id))))
              return { flows: flows.length + starts.length, clientStates: withClientState.length }
            })
        })
    )
  )
}
