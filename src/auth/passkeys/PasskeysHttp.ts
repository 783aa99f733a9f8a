import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentUser } from "../contract/CurrentUser.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { type PasskeyAnswer, Passkeys } from "./Passkeys.js"
import { PasskeysApi } from "./PasskeysApi.js"

/** The verify body as the service reads it: a credential sent as null is there (and is no credential response). */
const answerOf = (payload: { readonly challenge_id?: string | null | undefined; readonly credential?: unknown }): PasskeyAnswer => ({
  challengeId: payload.challenge_id,
  credential: payload.credential,
  hasCredential: "credential" in payload
})

export const PasskeysHttpLive = HttpApiBuilder.group(PasskeysApi, "passkeys", (handlers) =>
  Effect.gen(function*() {
    const passkeys = yield* Passkeys
    const limits = yield* RateLimits
    return handlers
      .handle("authenticationOptions", () => Effect.zipRight(limits.check("passkey_options"), passkeys.authenticationOptions()))
      .handle("authenticationVerify", ({ payload }) =>
        withSessionHeaders(passkeys.authenticationVerify(answerOf(payload))).pipe(
          // Counted once answered: a refused assertion is no sign-in.
          Effect.tap(() => countTagged(AuthMetrics.signIns, "grant_type", "passkey"))
        ))
      .handle("registrationOptions", () => Effect.flatMap(CurrentUser, passkeys.registrationOptions))
      .handle("registrationVerify", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => passkeys.registrationVerify(caller, answerOf(payload))))
      .handle("listPasskeys", () => Effect.flatMap(CurrentUser, ({ user }) => passkeys.list(user.id)))
      .handle("renamePasskey", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, ({ user }) => passkeys.rename(user, path.passkey_id, payload.friendly_name)))
      .handle("deletePasskey", ({ path }) => Effect.flatMap(CurrentUser, (caller) => passkeys.remove(caller, path.passkey_id)))
  }))
