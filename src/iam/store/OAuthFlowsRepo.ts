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
  readonly link_user_id: number | null
}

/**
 * The oauth_flows table (migration iam 0006): OAuth2 sign-ins and links started and not yet finished, by their state's
 * digest. `take` deletes the flow as it reads it, so a state is finished once, on any instance, whatever comes of it.
 * And the oauth_links table (migration iam 0007): which account linked which provider identity.
 */
export class OAuthFlowsRepo extends Effect.Service<OAuthFlowsRepo>()("iam/OAuthFlowsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    const insert = (digest: string, flow: StoredFlow): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.oauth_flows)} ${
        sql.insert({
          state_hash: digest,
          provider: flow.provider,
          code_verifier: flow.codeVerifier,
          expires_at: flow.expiresAt,
          link_user_id: flow.linkUserId
        })
      }`.pipe(Effect.asVoid, catchSql)

    /** The flow, deleted in the same statement: a second take of the same state finds nothing. */
    const take = (digest: string): Effect.Effect<StoredFlow | undefined, IamError> =>
      sql<FlowRow>`DELETE FROM ${sql(table.oauth_flows)} WHERE state_hash = ${digest}
        RETURNING provider, code_verifier, expires_at, link_user_id`.pipe(
        Effect.map(([row]) =>
          row === undefined ? undefined : {
            provider: row.provider,
            codeVerifier: row.code_verifier,
            expiresAt: new Date(row.expires_at),
            linkUserId: row.link_user_id === null ? null : Number(row.link_user_id)
          }
        ),
        catchSql
      )

    /** Deletes the flows expired before `before`: none of them can be finished. */
    const sweep = (before: Date): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.oauth_flows)} WHERE expires_at < ${before}`.pipe(Effect.asVoid, catchSql)

    /** The account that linked the provider identity, if one did. */
    const linkedUser = (provider: string, subject: string): Effect.Effect<number | undefined, IamError> =>
      sql<{ user_id: number }>`SELECT user_id FROM ${sql(table.oauth_links)} WHERE provider = ${provider} AND subject = ${subject}`.pipe(
        Effect.map(([row]) => (row === undefined ? undefined : Number(row.user_id))),
        catchSql
      )

    /**
     * Links the provider identity to `userId` unless an account holds it already; answers the account that holds it
     * after the statement (`userId`, or the other one). One statement: two links racing for one identity cannot both
     * win. The no-op update makes RETURNING answer the row that was there.
     */
    const link = (provider: string, subject: string, userId: number, at: Date): Effect.Effect<number, IamError> =>
      sql<{ user_id: number }>`INSERT INTO ${sql(table.oauth_links)} ${sql.insert({ provider, subject, user_id: userId, created_at: at })}
        ON CONFLICT (provider, subject) DO UPDATE SET provider = EXCLUDED.provider RETURNING user_id`.pipe(
        Effect.map(([row]) => Number(row!.user_id)),
        catchSql
      )

    return { insert, take, sweep, linkedUser, link }
  })
}) {
  /** In memory, for services tested without a database (one process: a take is atomic as it is). */
  static readonly Test: Layer.Layer<OAuthFlowsRepo> = Layer.effect(
    OAuthFlowsRepo,
    Effect.gen(function*() {
      const flows = yield* Ref.make<ReadonlyMap<string, StoredFlow>>(new Map())
      const links = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
      const key = (provider: string, subject: string) => JSON.stringify([provider, subject])
      return OAuthFlowsRepo.make({
        insert: (digest, flow) => Ref.update(flows, (all) => new Map([...all, [digest, flow]])),
        take: (digest) =>
          Ref.modify(flows, (all) => [all.get(digest), new Map([...all].filter(([key]) => key !== digest))]),
        sweep: (before) =>
          Ref.update(flows, (all) => new Map([...all].filter(([, flow]) => flow.expiresAt.getTime() >= before.getTime()))),
        linkedUser: (provider, subject) => Effect.map(Ref.get(links), (all) => all.get(key(provider, subject))),
        link: (provider, subject, userId) =>
          Ref.modify(links, (all) => {
            const holder = all.get(key(provider, subject))
            return holder !== undefined ? [holder, all] : [userId, new Map([...all, [key(provider, subject), userId]])]
          })
      })
    })
  )
}
