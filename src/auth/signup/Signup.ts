import { Clock, Duration, Effect, Either, Option, Redacted } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { type Session, User } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { otpTokenHash } from "../domain/OtpToken.js"
import { enforcePasswordPolicy } from "../domain/PasswordPolicy.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { compileAllowList } from "../../platform/http/RedirectAllowList.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { resendWait, tooSoon } from "../domain/SendWindow.js"
import type { UserRow } from "../domain/UserRow.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { userJson } from "../users/UserJson.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { Users } from "../users/Users.js"
import { type UserPatch, UsersRepo } from "../users/UsersRepo.js"

export interface SignupRequest {
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly password?: string | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  readonly redirectTo?: string | undefined
}

/** POST /signup (reference §2.1, §2.2). */
export class Signup extends Effect.Service<Signup>()("auth/Signup", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const newUsers = yield* Users
    const identities = yield* IdentitiesRepo
    const tokens = yield* AccessTokens
    const hasher = yield* PasswordHasher
    const messages = yield* AuthMessages
    const random = yield* SecureRandom
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    // Puts back the send bookkeeping after a message that never arrived; these columns hold no unique key.
    const restore = (id: string, patch: UserPatch, at: Date) => Effect.orDie(users.update(id, patch, at))

    /** The enumeration-safe answer to a duplicate sign-up: a plausible, unconfirmed user that does not exist. */
    const fauxUser = (email: string | null, phone: string | null, data: Record<string, unknown>, at: Date, id: string): User => {
      const provider = email !== null ? "email" : "phone"
      // Shaped like a new unconfirmed user's metadata, so the two cannot be told apart by it.
      const userMetadata = {
        ...data,
        sub: id,
        ...(email !== null ? { email } : { phone }),
        email_verified: false,
        phone_verified: false
      }
      return new User({
        id,
        aud: config.jwt.aud,
        role: config.jwt.defaultGroupName,
        email: email ?? "",
        phone: phone ?? "",
        confirmation_sent_at: at.toISOString(),
        app_metadata: { provider, providers: [provider] },
        user_metadata: userMetadata,
        identities: [],
        created_at: at.toISOString(),
        updated_at: at.toISOString(),
        is_anonymous: false
      })
    }

    /**
     * A sign-up of an address a confirmed user holds. With autoconfirm on, a new sign-up would have returned a
     * session, so hiding the account protects nothing: GoTrue answers user_already_exists (422; the spec says 400
     * for phones, and the spec wins). Otherwise the faux user keeps account existence private.
     */
    const duplicate = (
      email: string | null,
      phone: string | null,
      data: Record<string, unknown>,
      autoconfirm: boolean,
      at: Date
    ): Effect.Effect<User, AuthError> =>
      autoconfirm
        ? Effect.fail(AuthError.of(email !== null ? 422 : 400, "user_already_exists", "User already registered"))
        : Effect.map(random.uuid(), (id) => fauxUser(email, phone, data, at, id))

    /** Sends (or re-sends) the sign-up confirmation, honouring SMTP_MAX_FREQUENCY / SMS_MAX_FREQUENCY. */
    const sendConfirmation = (user: UserRow, redirectTo: string, at: Date) =>
      Effect.gen(function*() {
        const viaEmail = user.email !== null && user.email !== ""
        const channel = viaEmail ? "email" : "sms"
        const window = viaEmail ? config.smtp.maxFrequency : config.sms.maxFrequency
        const wait = resendWait(user.confirmation_sent_at, window, at)
        if (Option.isSome(wait)) return yield* tooSoon(channel, wait.value)
        const recipient = viaEmail ? user.email! : user.phone!
        const otp = yield* (viaEmail ? random.digits(config.mailer.otpLength) : messages.smsOtp(recipient))
        const tokenHash = otpTokenHash(recipient, otp)
        const claimed = yield* users.claimSend(user.id, "confirmation_sent_at", window, at, { confirmation_token: tokenHash })
        if (Option.isNone(claimed)) return yield* tooSoon(channel, Math.ceil(Duration.toSeconds(window)))
        yield* (viaEmail ? messages.confirmation(recipient, tokenHash, otp, redirectTo) : messages.text(recipient, otp)).pipe(
          // Nothing arrived, so the user must be able to ask again at once: give the window back.
          Effect.tapError(() => restore(user.id, {
            confirmation_sent_at: user.confirmation_sent_at,
            confirmation_token: user.confirmation_token
          }, at))
        )
        return claimed.value
      })

    const signupAnonymously = (data: Record<string, unknown>, at: Date) =>
      Effect.gen(function*() {
        if (!config.anonymousUsersEnabled) {
          return yield* AuthError.of(422, "anonymous_provider_disabled", "Anonymous sign-ins are disabled")
        }
        const user = yield* transactions.run(newUsers.create({
          aud: config.jwt.aud,
          role: config.jwt.defaultGroupName,
          email: null,
          phone: null,
          encryptedPassword: null,
          userMetadata: data,
          provider: null,
          emailConfirmedAt: null,
          phoneConfirmedAt: null,
          isAnonymous: true,
          now: at
        })).pipe(Effect.orDie)
        return yield* tokens.issue(user, "anonymous", at)
      })

    const signup = Effect.fn("Signup.signup")(function*(request: SignupRequest): Effect.fn.Return<Session | User, AuthError> {
      const at = yield* now
      if (config.disableSignup) return yield* AuthError.of(422, "signup_disabled", "Signups not allowed for this instance")
      const rawEmail = request.email ?? ""
      const rawPhone = request.phone ?? ""
      const data = request.data ?? {}
      const tooLarge = metadataTooLarge(data, {})
      if (Option.isSome(tooLarge)) return yield* AuthError.validation(tooLarge.value)
      if (rawEmail === "" && rawPhone === "") return yield* signupAnonymously(data, at)
      const password = request.password ?? ""
      if (password === "") return yield* AuthError.validation("Signup requires a valid password")
      yield* enforcePasswordPolicy(password, config.password)
      if (rawEmail !== "" && rawPhone !== "") {
        return yield* AuthError.validation("Only an email address or phone number should be provided on signup.")
      }
      const viaEmail = rawEmail !== ""
      if (viaEmail && !config.externalEmailEnabled) {
        return yield* AuthError.of(400, "email_provider_disabled", "Email signups are disabled")
      }
      if (!viaEmail && !config.externalPhoneEnabled) {
        return yield* AuthError.of(400, "phone_provider_disabled", "Phone signups are disabled")
      }
      const email = viaEmail
        ? yield* Either.mapLeft(parseEmail(rawEmail), (problem) => AuthError.validation(emailProblemMessage[problem]))
        : null
      const phone = viaEmail
        ? null
        : yield* Option.match(normalizePhone(rawPhone), {
          onNone: () => Either.left(AuthError.validation(invalidPhoneMessage)),
          onSome: Either.right
        })
      const autoconfirm = viaEmail ? config.mailer.autoconfirm : config.sms.autoconfirm
      const redirectTo = chooseRedirect(request.redirectTo, config.siteUrl, allowList)

      const existing = viaEmail ? yield* users.findByEmail(config.jwt.aud, email!) : yield* users.findByPhone(config.jwt.aud, phone!)
      if (Option.isSome(existing)) {
        const user = existing.value
        const confirmed = viaEmail ? user.email_confirmed_at !== null : user.phone_confirmed_at !== null
        if (confirmed) return yield* duplicate(email, phone, data, autoconfirm, at)
        // Unconfirmed: the password is not changed (that would let anyone take the address over); re-send.
        const resent = yield* sendConfirmation(user, redirectTo, at)
        return userJson(resent, yield* identities.forUser(resent.id))
      }

      const encryptedPassword = yield* hasher.hash(Redacted.make(password))
      const created = yield* transactions.run(newUsers.create({
        aud: config.jwt.aud,
        role: config.jwt.defaultGroupName,
        email,
        phone,
        encryptedPassword,
        userMetadata: data,
        provider: viaEmail ? "email" : "phone",
        emailConfirmedAt: viaEmail && autoconfirm ? at : null,
        phoneConfirmedAt: !viaEmail && autoconfirm ? at : null,
        isAnonymous: false,
        now: at
      })).pipe(
        // Lost a race with a concurrent sign-up of the same address: answer as for any duplicate.
        Effect.catchTag("UniqueViolation", () => Effect.succeed(undefined)),
        Effect.orDie
      )
      if (created === undefined) return yield* duplicate(email, phone, data, autoconfirm, at)
      if (autoconfirm) return yield* tokens.issue(created, "password", at)
      const sent = yield* sendConfirmation(created, redirectTo, at).pipe(
        // Nothing was sent, so nobody can confirm this account: remove it rather than leave it half made.
        Effect.tapError(() => users.remove(created.id))
      )
      return userJson(sent, yield* identities.forUser(sent.id))
    })

    return { signup } as const
  }),
  dependencies: [Users.Default, UsersRepo.Default, IdentitiesRepo.Default, AccessTokens.Default, AuthMessages.Default, Transactions.Live]
}) {}
