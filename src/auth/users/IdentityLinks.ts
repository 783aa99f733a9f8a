import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { type ExternalProfile, externalIdentityData, profileEmail, providersOf } from "../domain/ExternalLink.js"
import { decideUnlink, emailAfterUnlink } from "../domain/IdentityUnlink.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import { AuditLog } from "./AuditLog.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { UniqueViolation, UsersRepo } from "./UsersRepo.js"
import { traced } from "../../platform/Traced.js"

const alreadyLinked = (toThisUser: boolean) =>
  AuthError.of(422, "identity_already_exists", toThisUser ? "Identity is already linked" : "Identity is already linked to another user")

/**
 * Manual identity linking (GoTrue's linkIdentityToUser and DeleteIdentity): a signed-in user adds a provider's
 * identity to their own account, or removes one. Unlike a sign-in it never makes a user and never moves an identity
 * between users.
 */
export class IdentityLinks extends Effect.Service<IdentityLinks>()("auth/IdentityLinks", {
  effect: Effect.gen(function*() {
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const transactions = yield* Transactions
    const audit = yield* AuditLog
    const random = yield* SecureRandom

    const providersAfter = (user: UserRow) =>
      Effect.map(identities.forUser(user.id), (rows) => ({
        ...(user.raw_app_meta_data ?? {}),
        providers: providersOf(rows.map((row) => row.provider))
      }))

    const lockUser = (userId: string) =>
      Effect.flatMap(users.lockById(userId), Option.match({
        onNone: () => AuthError.of(404, "user_not_found", "User not found"),
        onSome: Effect.succeed
      }))

    const linkInTransaction = (userId: string, provider: string, profile: ExternalProfile, at: Date) =>
      Effect.gen(function*() {
        let user = yield* lockUser(userId)
        if (isBanned(user, at)) return yield* AuthError.of(403, "user_banned", "User is banned")
        const known = yield* identities.findByProvider(provider, profile.providerId)
        if (Option.isSome(known)) return yield* alreadyLinked(known.value.user_id === user.id)
        yield* identities.insert({
          id: yield* random.uuid(),
          provider_id: profile.providerId,
          user_id: user.id,
          identity_data: externalIdentityData(profile),
          provider,
          now: at
        })
        const email = profileEmail(profile)
        // A user without an address (anonymous, or phone only) takes the provider's, but only one the provider
        // verified: GoTrue would adopt an unverified one and mail a confirmation, which leaves an unproven address on
        // the account meanwhile.
        const adopt = (user.email ?? "") === "" && email !== undefined && profile.emailVerified
        user = yield* users.update(user.id, {
          ...(adopt ? { email, email_confirmed_at: user.email_confirmed_at ?? at, is_anonymous: false } : {}),
          raw_app_meta_data: yield* providersAfter(user)
        }, at).pipe(
          Effect.catchTag("UniqueViolation", () =>
            AuthError.of(422, "email_exists", "A user with this email address has already been registered"))
        )
        yield* audit.record("identity_linked", { actor: user, traits: { provider, provider_id: profile.providerId } })
        return user
      })

    /**
     * Adds the provider's identity to the user: 422 identity_already_exists when that identity belongs to anyone
     * already (this user included), 404 user_not_found when the user went while they were at the provider.
     */
    const link = traced("IdentityLinks.link")(function*(
      userId: string,
      provider: string,
      profile: ExternalProfile
    ): Effect.fn.Return<UserRow, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const attempt = transactions.run(linkInTransaction(userId, provider, profile, at)).pipe(Effect.catchTag("SqlError", Effect.die))
      // Two links of one identity race to insert it: the loser rolls back on the unique key, and a second run finds
      // the winner's row and refuses.
      const lostRace = (defect: unknown) => defect instanceof UniqueViolation || isUniqueViolation(defect)
      return yield* attempt.pipe(Effect.catchSomeDefect((defect) => (lostRace(defect) ? Option.some(attempt) : Option.none())))
    })

    const unlinkInTransaction = (userId: string, identityId: string) =>
      Effect.gen(function*() {
        const at = new Date(yield* Clock.currentTimeMillis)
        const user = yield* lockUser(userId)
        const decision = decideUnlink(yield* identities.forUser(user.id), identityId)
        if (decision._tag === "Refuse") {
          return yield* decision.reason === "single_identity_not_deletable"
            ? AuthError.of(422, "single_identity_not_deletable", "User must have at least 1 identity after unlinking")
            : AuthError.of(422, "identity_not_found", "Identity doesn't exist")
        }
        const { identity } = decision
        yield* identities.remove(identity.id)
        const next = emailAfterUnlink(user.email, decision.remaining)
        const updated = yield* users.update(user.id, {
          ...(next !== undefined ? { email: next, email_confirmed_at: user.email_confirmed_at ?? at } : {}),
          raw_app_meta_data: yield* providersAfter(user)
        }, at).pipe(
          Effect.catchTag("UniqueViolation", () =>
            AuthError.of(422, "email_conflict_identity_not_deletable", "Unable to unlink identity due to email conflict"))
        )
        yield* audit.record("identity_unlinked", {
          actor: updated,
          traits: { identity_id: identity.id, provider: identity.provider, provider_id: identity.provider_id }
        })
      })

    /**
     * Removes one of the user's identities. 422 single_identity_not_deletable for the last one, 422
     * identity_not_found for one that is not theirs; the user's email moves to a remaining identity's when the
     * removed identity held it and another's provider verified its own (never to an unverified address), and
     * app_metadata.providers is rebuilt.
     */
    const unlink = traced("IdentityLinks.unlink")(function*(userId: string, identityId: string): Effect.fn.Return<void, AuthError> {
      yield* transactions.run(unlinkInTransaction(userId, identityId)).pipe(Effect.catchTag("SqlError", Effect.die))
    })

    return { link, unlink } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default, AuditLog.Default, Transactions.Live]
}) {}
