import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthError } from "../domain/AuthError.js"
import type { UserRow } from "../domain/UserRow.js"
import type { UsersRepoShape } from "./UsersRepo.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * GoTrue's loadUser for the admin routes: the user a path's `user_id` names. A malformed id is 404 (not 400) and an
 * unknown user 404, in GoTrue's words.
 */
export const pathUser = (users: Pick<UsersRepoShape, "findById">, rawId: string): Effect.Effect<UserRow, AuthError> =>
  UUID.test(rawId)
    ? Effect.flatMap(users.findById(rawId.toLowerCase()), Option.match({
      onNone: () => Effect.fail(AuthError.of(404, "user_not_found", "User not found")),
      onSome: Effect.succeed
    }))
    : Effect.fail(AuthError.of(404, "validation_failed", "user_id must be an UUID"))
