import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentAdmin } from "../contract/CurrentAdmin.js"
import { adminActor } from "../users/AuditLog.js"
import { AdminFactorsApi } from "./AdminFactorsApi.js"
import { Mfa } from "./Mfa.js"

/** Who the audit log says acted: the admin token's role, as GoTrue records it. */
const actor = Effect.map(CurrentAdmin, ({ claims }) => adminActor(claims))

export const AdminFactorsHttpLive = HttpApiBuilder.group(AdminFactorsApi, "adminFactors", (handlers) =>
  Effect.gen(function*() {
    const mfa = yield* Mfa
    return handlers
      .handle("listFactors", ({ path }) => mfa.adminList(path.user_id))
      .handle("updateFactor", ({ path, payload }) =>
        Effect.flatMap(actor, (by) =>
          mfa.adminUpdate(path.user_id, path.factor_id, { friendlyName: payload.friendly_name ?? "", phone: payload.phone ?? "" }, by)))
      .handle("deleteFactor", ({ path }) => Effect.flatMap(actor, (by) => mfa.adminDelete(path.user_id, path.factor_id, by)))
  }))
