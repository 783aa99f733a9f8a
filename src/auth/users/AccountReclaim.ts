import * as Effect from "effect/Effect"
import type { UserRow } from "../domain/UserRow.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { PendingTokens } from "./PendingTokens.js"
import { type UserPatch, UsersRepo } from "./UsersRepo.js"
import { traced } from "../../platform/Traced.js"

/**
 * An account whose address nobody had proven, taken over by whoever just proved it: a verified provider sign-in
 * (GoTrue's RemoveUnconfirmedIdentities), or the confirmation of one of several sign-ups of the address. Whatever
 * the account held was set by someone who never proved the address, so all of it goes: every identity but the one
 * the proof came with, every session (their refresh tokens with them), every pending token. The caller's patch says
 * what the proof brings (its password or none, its metadata) and runs inside the caller's transaction.
 */
export class AccountReclaim extends Effect.Service<AccountReclaim>()("auth/AccountReclaim", {
  effect: Effect.gen(function*() {
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const sessions = yield* SessionsRepo
    const pending = yield* PendingTokens

    const reclaim = traced("AccountReclaim.reclaim")(function*(
      user: UserRow,
      keepIdentityId: string,
      patch: UserPatch,
      at: Date
    ): Effect.fn.Return<UserRow> {
      yield* identities.removeOthers(user.id, keepIdentityId)
      yield* sessions.deleteForUser(user.id, "all")
      yield* pending.forgetAll(user.id)
      return yield* users.update(user.id, {
        confirmation_token: "",
        recovery_token: "",
        email_change: "",
        email_change_token_new: "",
        email_change_token_current: "",
        email_change_confirm_status: 0,
        phone_change: "",
        phone_change_token: "",
        reauthentication_token: "",
        ...patch
      }, at).pipe(Effect.orDie)
    })

    return { reclaim } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default, SessionsRepo.Default, PendingTokens.Default]
}) {}
