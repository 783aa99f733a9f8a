import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type { IamError } from "../domain/IamError.js"
import type { StoredFlow } from "../domain/OAuthFlowRules.js"
import { catchSql, IamSql } from "../IamSql.js"

interface FlowRow {
  readonly provider: string
  readonly code_verifier: string | null
  readonly expires_at: Date
}

/**
 * The oauth_flows table (migration iam 0006): OAuth2 sign-ins started and not yet finished, by their state's digest.
 * `take` deletes the flow as it reads it, so a state is finished once, on any instance, whatever comes of it.
 */
export class OAuthFlowsRepo extends Effect.Service<OAuthFlowsRepo>()("iam/OAuthFlowsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    const insert = (digest: string, flow: StoredFlow): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.oauth_flows)} ${
        sql.insert({ state_hash: digest, provider: flow.provider, code_verifier: flow.codeVerifier, expires_at: flow.expiresAt })
      }`.pipe(Effect.asVoid, catchSql)

    /** The flow, deleted in the same statement: a second take of the same state finds nothing. */
    const take = (digest: string): Effect.Effect<StoredFlow | undefined, IamError> =>
      sql<FlowRow>`DELETE FROM ${sql(table.oauth_flows)} WHERE state_hash = ${digest}
        RETURNING provider, code_verifier, expires_at`.pipe(
        Effect.map(([row]) =>
          row === undefined ? undefined : { provider: row.provider, codeVerifier: row.code_verifier, expiresAt: new Date(row.expires_at) }
        ),
        catchSql
      )

    /** Deletes the flows expired before `before`: none of them can be finished. */
    const sweep = (before: Date): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.oauth_flows)} WHERE expires_at < ${before}`.pipe(Effect.asVoid, catchSql)

    return { insert, take, sweep }
  })
}) {
  /** In memory, for services tested without a database (one process: a take is atomic as it is). */
  static readonly Test: Layer.Layer<OAuthFlowsRepo> = Layer.effect(
    OAuthFlowsRepo,
    Effect.gen(function*() {
      const flows = yield* Ref.make<ReadonlyMap<string, StoredFlow>>(new Map())
      return OAuthFlowsRepo.make({
        insert: (digest, flow) => Ref.update(flows, (all) => new Map([...all, [digest, flow]])),
        take: (digest) =>
          Ref.modify(flows, (all) => [all.get(digest), new Map([...all].filter(([key]) => key !== digest))]),
        sweep: (before) =>
          Ref.update(flows, (all) => new Map([...all].filter(([, flow]) => flow.expiresAt.getTime() >= before.getTime())))
      })
    })
  )
}
