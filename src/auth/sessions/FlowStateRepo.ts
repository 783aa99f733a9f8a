import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Ref } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { authTables } from "../AuthTables.js"
import type { ChallengeMethod } from "../domain/Pkce.js"

/** A flow_state row, as far as the email PKCE flows use it. */
export interface FlowState {
  readonly id: string
  readonly user_id: string | null
  readonly auth_code: string
  readonly code_challenge_method: ChallengeMethod
  readonly code_challenge: string
  readonly authentication_method: string
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

export interface FlowStateRepoShape {
  readonly insert: (flow: NewFlowState) => Effect.Effect<void>
  /** The user's most recent flow for `authenticationMethod`: the one a PKCE link's redirect hands the code of. */
  readonly latestFor: (userId: string, authenticationMethod: string) => Effect.Effect<Option.Option<FlowState>>
  readonly findByAuthCode: (authCode: string) => Effect.Effect<Option.Option<FlowState>>
  /** Deletes the flow; false when another request deleted it first, so an auth code is exchanged once. */
  readonly take: (id: string) => Effect.Effect<boolean>
}

/** The flow_state table (migration 0004). It sits by the sessions because every flow ends in one. */
export class FlowStateRepo extends Effect.Service<FlowStateRepo>()("auth/FlowStateRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const t = authTables(config.db.namespace)
    const columns = sql`id, user_id, auth_code, code_challenge_method, code_challenge, authentication_method, created_at`

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
      const rows = yield* sql<FlowState>`SELECT ${columns} FROM ${sql(t.flow_state)} WHERE auth_code = ${authCode} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const take = Effect.fn("FlowStateRepo.take")(function*(id: string) {
      const rows = yield* sql`DELETE FROM ${sql(t.flow_state)} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    return { insert, latestFor, findByAuthCode, take } satisfies FlowStateRepoShape
  })
}) {
  static readonly Test: Layer.Layer<FlowStateRepo> = Layer.effect(
    FlowStateRepo,
    Effect.map(Ref.make<ReadonlyArray<FlowState>>([]), (rows) =>
      FlowStateRepo.make({
        insert: (flow) =>
          Ref.update(rows, (all) => [...all, {
            id: flow.id,
            user_id: flow.userId,
            auth_code: flow.authCode,
            code_challenge_method: flow.method,
            code_challenge: flow.challenge,
            authentication_method: flow.authenticationMethod,
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
        take: (id) => Ref.modify(rows, (all) => [all.some((row) => row.id === id), all.filter((row) => row.id !== id)])
      }))
  )
}
