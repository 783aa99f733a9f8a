import * as Effect from "effect/Effect"
import { SecureRandom } from "../../platform/SecureRandom.js"
import type { UserRow } from "../domain/UserRow.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { UniqueViolation, UsersRepo } from "./UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface NewUser {
  readonly aud: string
  readonly role: string
  readonly email: string | null
  readonly phone: string | null
  readonly encryptedPassword: string | null
  readonly userMetadata: Record<string, unknown>
  readonly provider: "email" | "phone" | null
  /** Admin create: the user's id when the admin chose one. */
  readonly id?: string
  /** Admin create: an identity for each of these, instead of for `provider` alone (a user with email and phone). */
  readonly providers?: ReadonlyArray<"email" | "phone">
  /**
   * Who is making the user. A self-service sign-up ("signup": /signup, /otp) gets its identity's claims merged into
   * its metadata, as GoTrue's sign-up overwrites the metadata with the identity's; an administrator's user ("admin":
   * admin create, invite, generate_link) keeps the metadata exactly as the admin gave it, its identity carrying only
   * the claims, and gains only the `email_verified` / `phone_verified` marks that confirming it adds.
   */
  readonly madeBy: "signup" | "admin"
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
    const random = yield* SecureRandom

    /**
     * Inserts a user and its identity; run inside the caller's transaction. For a sign-up, as in GoTrue, the
     * identity's claims (sub, email or phone, email_verified, phone_verified) are merged over the user's metadata,
     * and the user's copy says whether the address is confirmed while the identity's stays false. An admin's user
     * keeps its metadata as given (see NewUser.madeBy).
     */
    const create = traced("Users.create")(function*(user: NewUser): Effect.fn.Return<UserRow, UniqueViolation> {
      const id = user.id ?? (yield* random.uuid())
      const providers = user.providers ?? (user.provider === null ? [] : [user.provider])
      const appMetadata = providers.length === 0 ? {} : { provider: providers[0], providers }
      const claims = {
        sub: id,
        ...(user.email !== null ? { email: user.email } : {}),
        ...(user.phone !== null ? { phone: user.phone } : {})
      }
      const confirmedMarks = {
        ...(user.emailConfirmedAt !== null ? { email_verified: true } : {}),
        ...(user.phoneConfirmedAt !== null ? { phone_verified: true } : {})
      }
      const userMetadata = providers.length === 0
        ? user.userMetadata
        : user.madeBy === "admin"
        ? { ...user.userMetadata, ...confirmedMarks }
        : {
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
      for (const provider of providers) {
        // With two identities each carries only its own address, as GoTrue's admin create gives them.
        const own = providers.length === 1 ? claims : provider === "email" ? { sub: id, email: user.email } : { sub: id, phone: user.phone }
        yield* identities.insert({
          id: yield* random.uuid(),
          provider_id: id,
          user_id: id,
          identity_data: { ...(user.madeBy === "signup" ? user.userMetadata : {}), ...own, email_verified: false, phone_verified: false },
          provider,
          now: user.now
        })
      }
      return row
    })

    return { create } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default]
}) {}
