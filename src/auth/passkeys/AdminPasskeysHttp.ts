import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentAdmin } from "../contract/CurrentAdmin.js"
import { adminActor } from "../users/AuditLog.js"
import { Passkeys } from "./Passkeys.js"
import { PasskeysApi } from "./PasskeysApi.js"

export const AdminPasskeysHttpLive = HttpApiBuilder.group(PasskeysApi, "adminPasskeys", (handlers) =>
  Effect.gen(function*() {
    const passkeys = yield* Passkeys
    return handlers
      .handle("listUserPasskeys", ({ path }) => passkeys.adminList(path.user_id))
      .handle("deleteUserPasskey", ({ path }) =>
        // The admin token's role is who acted, as GoTrue records it.
        Effect.flatMap(CurrentAdmin, ({ claims }) => passkeys.adminRemove(path.user_id, path.passkey_id, adminActor(claims))))
  }))
