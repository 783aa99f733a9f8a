import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { UserRow } from "../domain/UserRow.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { UniqueViolation, UsersRepo } from "./UsersRepo.js"

export interface NewUser {
  readonly aud: string
  readonly role: string
  readonly email: string | null
  readonly phone: string | null
  readonly encryptedPassword: string | null
  readonly userMetadata: Record<string, unknown>
  readonly provider: "email" | "phone" | null
  readonly emailConfirmedAt: Date | null
  readonly phoneConfirmedAt: Date | null
  readonly isAnonymous: boolean
  readonly now: Date
}

/** Making a user: the row and, for email or phone users, its identity, shaped as GoTrue shapes them. */
export class Users extends Effect.Service<Users>()("auth/Users", {
  effect: Effect.gen(function*() {
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo

    /**
     * Inserts a user and its identity; run inside the caller's transaction. As in GoTrue, the identity's claims
     * (sub, email or phone, email_verified, phone_verified) are merged over the user's metadata, and the user's
     * copy says whether the address is confirmed while the identity's stays false.
     */
    const create = Effect.fn("Users.create")(function*(user: NewUser): Effect.fn.Return<UserRow, UniqueViolation> {
      const id = randomUUID()
      const appMetadata = user.provider === null ? {} : { provider: user.provider, providers: [user.provider] }
      const claims = {
        sub: id,
        ...(user.email !== null ? { email: user.email } : {}),
        ...(user.phone !== null ? { phone: user.phone } : {})
      }
      const userMetadata = user.provider === null ? user.userMetadata : {
        ...user.userMetadata,
        ...claims,
        email_verified: user.emailConfirmedAt !== null,
        phone_verified: user.phoneConfirmedAt !== null
      }
      const row = yield* users.insert({
        id,
        aud: user.aud,
        role: user.role,
        email: user.email,
        phone: user.phone,
        encrypted_password: user.encryptedPassword ?? "",
        email_confirmed_at: user.emailConfirmedAt,
        phone_confirmed_at: user.phoneConfirmedAt,
        raw_app_meta_data: appMetadata,
        raw_user_meta_data: userMetadata,
        is_anonymous: user.isAnonymous,
        now: user.now
      })
      if (user.provider !== null) {
        yield* identities.insert({
          id: randomUUID(),
          provider_id: id,
          user_id: id,
          identity_data: { ...user.userMetadata, ...claims, email_verified: false, phone_verified: false },
          provider: user.provider,
          now: user.now
        })
      }
      return row
    })

    return { create } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default]
}) {}
