import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Ref } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { authTables } from "../AuthTables.js"
import type { ChallengeMethod } from "../domain/Pkce.js"

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
  readonly now: Date
}

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
   * only, so a replayed or concurrent callback finds nothing.
   */
  readonly claimOAuth: (id: string) => Effect.Effect<Option.Option<OAuthFlow>>
  /** The id of the started OAuth flow an OAuth 1.0a provider's request token belongs to. */
  readonly findOAuthByRequestToken: (requestToken: string) => Effect.Effect<Option.Option<string>>
  readonly insertOAuthCode: (flow: OAuthCodeFlow) => Effect.Effect<void>
}

/** The flow_state table (migration 0004). It sits by the sessions because every flow ends in one. */
export class FlowStateRepo extends Effect.Service<FlowStateRepo>()("auth/FlowStateRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const t = authTables(config.db.namespace)
    const columns = sql`id, user_id, auth_code, code_challenge_method, code_challenge, authentication_method, provider_type,
      provider_access_token, provider_refresh_token, created_at`

    const insert = Effect.fn("FlowStateRepo.insert")(function*(flow: NewFlowState) {
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: flow.userId,
        auth_code: flow.authCode,
        code_challenge_method: flow.method,
        code_challenge: flow.challenge,
        provider_type: "email",
        authentication_method: flow.authenticationMethod,
        created_at: flow.now,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    const latestFor = Effect.fn("FlowStateRepo.latestFor")(function*(userId: string, authenticationMethod: string) {
      const rows = yield* sql<FlowState>`SELECT ${columns} FROM ${sql(t.flow_state)}
        WHERE user_id = ${userId} AND authentication_method = ${authenticationMethod}
        ORDER BY created_at DESC LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByAuthCode = Effect.fn("FlowStateRepo.findByAuthCode")(function*(authCode: string) {
      const rows = yield* sql<FlowState>`SELECT ${columns} FROM ${sql(t.flow_state)} WHERE auth_code = ${authCode} AND user_id IS NOT NULL LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const take = Effect.fn("FlowStateRepo.take")(function*(id: string) {
      const rows = yield* sql`DELETE FROM ${sql(t.flow_state)} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    const startOAuth = Effect.fn("FlowStateRepo.startOAuth")(function*(flow: OAuthFlowStart) {
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
        authentication_method: "oauth",
        referrer: flow.referrer,
        oauth_client_state_id: clientStateId,
        linking_target_id: flow.linkingTargetId ?? null,
        created_at: flow.now,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    const claimOAuth = Effect.fn("FlowStateRepo.claimOAuth")(function*(id: string) {
      const rows = yield* sql<OAuthFlow>`WITH flow AS (
          DELETE FROM ${sql(t.flow_state)} WHERE id = ${id} AND user_id IS NULL AND authentication_method = 'oauth'
          RETURNING id, provider_type, auth_code, code_challenge, code_challenge_method, referrer, oauth_client_state_id,
            linking_target_id, created_at
        ), client AS (
          DELETE FROM ${sql(t.oauth_client_states)} WHERE id IN (SELECT oauth_client_state_id FROM flow) RETURNING id, code_verifier
        )
        SELECT flow.id, flow.provider_type, flow.auth_code, flow.code_challenge, flow.code_challenge_method, flow.referrer,
          client.code_verifier AS provider_code_verifier, flow.linking_target_id, flow.created_at
        FROM flow LEFT JOIN client ON client.id = flow.oauth_client_state_id`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findOAuthByRequestToken = Effect.fn("FlowStateRepo.findOAuthByRequestToken")(function*(requestToken: string) {
      const rows = yield* sql<{ id: string }>`SELECT flow.id FROM ${sql(t.flow_state)} flow
        JOIN ${sql(t.oauth_client_states)} client ON client.id = flow.oauth_client_state_id
        WHERE client.request_token = ${requestToken} AND flow.user_id IS NULL AND flow.authentication_method = 'oauth'`
      return Option.map(Option.fromNullable(rows[0]), (row) => row.id)
    }, Effect.orDie)

    const insertOAuthCode = Effect.fn("FlowStateRepo.insertOAuthCode")(function*(flow: OAuthCodeFlow) {
      yield* sql`INSERT INTO ${sql(t.flow_state)} ${sql.insert({
        id: flow.id,
        user_id: flow.userId,
        auth_code: flow.authCode,
        code_challenge_method: flow.method,
        code_challenge: flow.challenge,
        provider_type: flow.providerType,
        provider_access_token: flow.providerAccessToken,
        provider_refresh_token: flow.providerRefreshToken,
        authentication_method: "oauth",
        auth_code_issued_at: flow.now,
        created_at: flow.createdAt,
        updated_at: flow.now
      })}`
    }, Effect.orDie)

    return {
      insert,
      latestFor,
      findByAuthCode,
      take,
      startOAuth,
      claimOAuth,
      findOAuthByRequestToken,
      insertOAuthCode
    } satisfies FlowStateRepoShape
  })
}) {
  static readonly Test: Layer.Layer<FlowStateRepo> = Layer.effect(
    FlowStateRepo,
    Effect.map(
      Effect.all([Ref.make<ReadonlyArray<FlowState>>([]), Ref.make<ReadonlyArray<OAuthFlow>>([]), Ref.make(new Map<string, string>())]),
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
                id: flow.id,
                provider_type: flow.providerType,
                auth_code: flow.pkce?.authCode ?? null,
                code_challenge: flow.pkce?.challenge ?? null,
                code_challenge_method: flow.pkce?.method ?? null,
                referrer: flow.referrer,
                provider_code_verifier: flow.providerCodeVerifier,
                linking_target_id: flow.linkingTargetId ?? null,
                created_at: flow.now
              }])
            ),
          claimOAuth: (id) =>
            Ref.modify(started, (all) => [Option.fromNullable(all.find((row) => row.id === id)), all.filter((row) => row.id !== id)]),
          findOAuthByRequestToken: (requestToken) =>
            Effect.map(Effect.all([Ref.get(requestTokens), Ref.get(started)]), ([map, all]) =>
              Option.filter(Option.fromNullable(map.get(requestToken)), (id) => all.some((row) => row.id === id))),
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
            }])
        })
    )
  )
}
