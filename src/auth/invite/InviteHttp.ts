import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi, CurrentAdmin } from "../Api.js"
import { adminActor } from "../users/AuditLog.js"
import { Invite } from "./Invite.js"

export const InviteHttpLive = HttpApiBuilder.group(AuthApi, "invite", (handlers) =>
  Effect.gen(function*() {
    const invite = yield* Invite
    return handlers.handle("invite", ({ payload, urlParams }) =>
      Effect.flatMap(CurrentAdmin, ({ claims }) =>
        invite.invite({ email: payload.email, data: payload.data, redirectTo: urlParams.redirect_to, actor: adminActor(claims) })))
  }))
