import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentAdmin } from "../contract/CurrentAdmin.js"
import { adminActor } from "../users/AuditLog.js"
import { Invite } from "./Invite.js"
import { InviteApi } from "./InviteApi.js"

export const InviteHttpLive = HttpApiBuilder.group(InviteApi, "invite", (handlers) =>
  Effect.gen(function*() {
    const invite = yield* Invite
    return handlers.handle("invite", ({ payload, urlParams }) =>
      Effect.flatMap(CurrentAdmin, ({ claims }) =>
        invite.invite({ email: payload.email, data: payload.data, redirectTo: urlParams.redirect_to, actor: adminActor(claims) })))
  }))
