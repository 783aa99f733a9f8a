import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { InputString } from "../contract/InputSchemas.js"
import { SessionList } from "../contract/SessionInfo.js"
import { AuthErrors } from "../http/AuthErrors.js"

const NoSuchSession = AuthErrors.refused(404, ["session_not_found"], "Also for an id that is not a UUID, or a session of another user's.")

export class UserSessionsGroup extends HttpApiGroup.make("userSessions")
  .add(
    HttpApiEndpoint.get("listSessions", "/user/sessions")
      .addSuccess(SessionList)
      .annotate(OpenApi.Description, "The caller's sessions in force, newest first (at most 100); `current` marks the one the access token belongs to")
  )
  .add(
    HttpApiEndpoint.del("endSession", "/user/sessions/:session_id")
      .setPath(Schema.Struct({ session_id: InputString }))
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NoSuchSession)
      .addError(AuthErrors.refused(400, ["validation_failed"], "The current session ends with POST /logout (scope `local`), not here."))
      .annotate(
        OpenApi.Description,
        "Ends one of the caller's other sessions: its refresh tokens stop working at once and its access tokens at this " +
          "server (GET /user answers `session_not_found`). In GoTrue's terms this is `POST /logout?scope=local` said " +
          "from another device; `scope=others` ends them all but the current one, `scope=global` all of them."
      )
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Sessions")
  .annotate(OpenApi.Description, "The signed-in user's sessions (Gatehouse's own; not in GoTrue): each call needs `Authorization: Bearer <access token>`") {}

const UserIdParam = Schema.Struct({ user_id: InputString })
const NoSuchUser = AuthErrors.refused(404, ["user_not_found", "validation_failed"], "A user_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")

export class AdminSessionsGroup extends HttpApiGroup.make("adminSessions")
  .add(
    HttpApiEndpoint.get("listUserSessions", "/admin/users/:user_id/sessions")
      .setPath(UserIdParam)
      .addSuccess(SessionList)
      .addError(NoSuchUser)
      .annotate(OpenApi.Description, "The user's sessions in force, newest first (at most 100)")
  )
  .add(
    HttpApiEndpoint.del("endUserSessions", "/admin/users/:user_id/sessions")
      .setPath(UserIdParam)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NoSuchUser)
      .annotate(OpenApi.Description, "Ends every session of the user's, and every refresh token they hold; the user stays as it is")
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: sessions")
  .annotate(OpenApi.Description, "A user's sessions (Gatehouse's own; not in GoTrue): each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

/** The sessions slices on their own: what their handlers are built against (Api.ts composes the groups into AuthApi). */
export const UserSessionsApi = AuthApiBase.add(UserSessionsGroup).add(AdminSessionsGroup)
