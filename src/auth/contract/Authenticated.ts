import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthErrors } from "../http/AuthErrors.js"
import { CurrentUser } from "./CurrentUser.js"

/** The access token of a session, as `Authorization: Bearer <access token>`. */
const AccessToken = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Format, "JWT"),
  HttpApiSecurity.annotate(OpenApi.Description, "A session's access token, from /token or /signup")
)

/** GoTrue's requireAuthentication: a valid bearer JWT whose user and session still exist. */
export class Authenticated extends HttpApiMiddleware.Tag<Authenticated>()("auth/Authenticated", {
  failure: Schema.Union(
    AuthErrors.invalid(401, ["no_authorization"]),
    AuthErrors.refused(403, ["bad_jwt", "user_not_found", "session_not_found", "user_banned"]),
    AuthErrors.refused(400, ["bad_jwt"], "`bad_jwt` with 400 when the token's sub is not a UUID, as GoTrue answers.")
  ),
  provides: CurrentUser,
  security: { bearer: AccessToken }
}) {}
