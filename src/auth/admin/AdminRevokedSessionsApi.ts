import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { documented, QueryParams } from "../contract/InputSchemas.js"
import { Timestamp } from "../contract/Timestamp.js"
import { CURSOR_PATTERN, DEFAULT_FEED_LIMIT, MAX_FEED_LIMIT, RFC3339_PATTERN } from "../domain/RevocationFeed.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const RevokedSession = Schema.Struct({
  session_id: Schema.String,
  user_id: Schema.String,
  ended_at: Timestamp
}).annotations({ identifier: "RevokedSession" })

const RevokedSessionsPage = Schema.Struct({
  sessions: Schema.Array(RevokedSession),
  next: Schema.String.annotations({ description: "The cursor to send as `since` for the sessions ended after these" }),
  has_more: Schema.Boolean.annotations({ description: "The page is full: ask again with `next` at once" })
}).annotations({ identifier: "RevokedSessionsPage" })

export class AdminRevokedSessionsGroup extends HttpApiGroup.make("adminRevokedSessions")
  .add(
    HttpApiEndpoint.get("revokedSessions", "/admin/revoked-sessions")
      .setUrlParams(QueryParams({
        since: Schema.optional(documented(
          { pattern: `^$|${RFC3339_PATTERN}|${CURSOR_PATTERN}` },
          "An RFC 3339 timestamp (sessions ended at or after it), or the `next` cursor of a previous page; absent: every session kept"
        )),
        limit: Schema.optional(documented({ pattern: "^((?!0+$)[0-9]{1,15})?$" }, `Default ${DEFAULT_FEED_LIMIT}, at most ${MAX_FEED_LIMIT}`))
      }))
      .addSuccess(RevokedSessionsPage)
      .addError(AuthErrors.refused(400, ["validation_failed"],
        "A `since` this server did not write as a cursor, or a timestamp that is no date (month 13)."))
      .annotate(OpenApi.Description,
        "The revocation feed: sessions that ended (a logout of any scope, refresh-token reuse, a ban, a new password, a " +
          "deleted user, housekeeping, GoTrue's own deletes), oldest first, so an API gateway that checks access tokens " +
          "by their signature can refuse those of ended sessions until they expire. Poll with the `next` cursor: a " +
          "transaction still running when a page is read is listed on a later page, never behind a cursor. Rows are " +
          "kept only while an access token of the session could still be valid: housekeeping deletes them JWT_EXP " +
          "plus an hour after the session ended, so a gateway that stops polling longer than that starts again from a " +
          "timestamp and loses nothing that matters.")
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: revoked sessions")
  .annotate(OpenApi.Description, "The feed of ended sessions for API gateways: needs `Authorization: Bearer <admin JWT>`") {}

/** The revocation feed's slice on its own: what its handlers are built against (Api.ts composes the group into AuthApi). */
export const AdminRevokedSessionsApi = AuthApiBase.add(AdminRevokedSessionsGroup)
