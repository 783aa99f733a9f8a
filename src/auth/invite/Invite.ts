import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { User } from "../contract/User.js"
import { AuthError } from "../domain/AuthError.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import type { UserRow } from "../domain/UserRow.js"
import { AuthMessages, messageTokenFor } from "../messages/AuthMessages.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { type AuditActor, AuditLog } from "../users/AuditLog.js"
import { type IssuedToken, PendingTokens } from "../users/PendingTokens.js"
import { userJson } from "../users/UserJson.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface InviteRequest {
  readonly email?: string | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  readonly redirectTo?: string | undefined
  /** Who invited, for the audit log. */
  readonly actor: AuditActor
}

const emailExists = () => AuthError.of(422, "email_exists", "A user with this email address has already been registered")

/**
 * POST /invite (reference §2.18): a new address becomes a user with no password and an email identity, an
 * unconfirmed one is invited again; either way the invite mail carries a code in confirmation_token whose link
 * (GET /verify type=invite) confirms the address and signs in, after which the app asks for a password. As in
 * GoTrue there is no per-recipient frequency window: only an admin can invite.
 */
export class Invite extends Effect.Service<Invite>()("auth/Invite", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const newUsers = yield* Users
    const identities = yield* IdentitiesRepo
    const messages = yield* AuthMessages
    const random = yield* SecureRandom
    const audit = yield* AuditLog
    const pending = yield* PendingTokens
    const allowList = compileAllowList(config.uriAllowList)

    /** The invitee with the fresh token stored; `created` says whether this request made the user. */
    const prepare = (existing: Option.Option<UserRow>, email: string, data: Record<string, unknown>, token: IssuedToken, at: Date) =>
      transactions.run(Effect.gen(function*() {
        const sent = { confirmation_token: token.stored, confirmation_sent_at: at, invited_at: at }
        const user = Option.isSome(existing) ? existing.value : yield* newUsers.create({
          aud: config.jwt.aud,
          role: config.jwt.defaultGroupName,
          email,
          phone: null,
          encryptedPassword: null,
          userMetadata: data,
          provider: "email",
          emailConfirmedAt: null,
          phoneConfirmedAt: null,
          isAnonymous: false,
          madeBy: "admin",
          now: at
        })
        const previous = yield* pending.record(user.id, "confirmation", token, at)
        return { user: yield* users.update(user.id, sent, at), created: Option.isNone(existing), previous }
      })).pipe(
        // Another request created the address between the lookup and this insert.
        Effect.catchTag("UniqueViolation", () => Effect.fail(emailExists())),
        Effect.catchTag("SqlError", Effect.die)
      )

    const invite = traced("Invite.invite")(function*(request: InviteRequest): Effect.fn.Return<User, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const email = yield* Either.mapLeft(parseEmail(request.email ?? ""), (problem) => AuthError.validation(emailProblemMessage[problem]))
      const data = request.data ?? {}
      const tooLarge = metadataTooLarge(data, {})
      if (Option.isSome(tooLarge)) return yield* AuthError.validation(tooLarge.value)
      const existing = yield* users.findByEmail(config.jwt.aud, email)
      if (Option.isSome(existing) && existing.value.email_confirmed_at !== null) return yield* emailExists()
      const redirectTo = chooseRedirect(request.redirectTo, config.siteUrl, allowList)
      const token = yield* pending.mint(email, yield* random.digits(config.mailer.otpLength), { pkce: false, mailed: true })
      const { created, previous, user } = yield* prepare(existing, email, data, token, at)
      yield* messages.invite(email, messageTokenFor(user, "confirmation_token", token), redirectTo).pipe(
        // Nothing arrived, so the invitation cannot be taken up: undo it rather than leave it half made.
        Effect.tapError(() =>
          created || Option.isNone(existing)
            ? users.remove(user.id)
            : Effect.zipRight(
              Effect.orDie(users.update(user.id, {
                confirmation_token: existing.value.confirmation_token,
                confirmation_sent_at: existing.value.confirmation_sent_at,
                invited_at: existing.value.invited_at
              }, at)),
              pending.putBack(previous)
            )
        )
      )
      // After the mail went: an invitation nobody received is undone above, and is no event.
      yield* audit.record("user_invited", { actor: request.actor, traits: { user_id: user.id, user_email: email } })
      return userJson(user, yield* identities.forUser(user.id))
    })

    return { invite } as const
  }),
  dependencies: [Users.Default, UsersRepo.Default, IdentitiesRepo.Default, AuthMessages.Default, PendingTokens.Default, AuditLog.Default, Transactions.Live]
}) {}
