import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { EvenTiming } from "../../platform/http/EvenTiming.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import type { Session } from "../contract/Session.js"
import { User } from "../contract/User.js"
import { AuthError } from "../domain/AuthError.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { requestedPkce } from "../domain/Pkce.js"
import { enforcePasswordPolicy } from "../domain/PasswordPolicy.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { textChannel } from "../domain/TextChannel.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { Confirmations } from "../messages/Confirmations.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { userJson } from "../users/UserJson.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface SignupRequest {
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly password?: string | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  readonly redirectTo?: string | undefined
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
  /** A phone sign-up's channel: sms (the default) or whatsapp. */
  readonly channel?: string | null | undefined
}

/** POST /signup (reference §2.1, §2.2). */
export class Signup extends Effect.Service<Signup>()("auth/Signup", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const newUsers = yield* Users
    const identities = yield* IdentitiesRepo
    const tokens = yield* AccessTokens
    const hasher = yield* PasswordHasher
    const random = yield* SecureRandom
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const confirmations = yield* Confirmations
    const audit = yield* AuditLog
    const timing = yield* EvenTiming

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

    const signupAnonymously = (data: Record<string, unknown>, at: Date) =>
      Effect.gen(function*() {
        if (!config.anonymousUsersEnabled) {
          return yield* AuthError.of(422, "anonymous_provider_disabled", "Anonymous sign-ins are disabled")
        }
        const user = yield* transactions.run(Effect.tap(newUsers.create({
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
          madeBy: "signup",
          now: at
        }), (actor) => audit.record("user_signedup", { actor, traits: { provider: "anonymous" } }))).pipe(Effect.orDie)
        yield* countTagged(AuthMetrics.signUps, "provider", "anonymous")
        return yield* tokens.issue(user, "anonymous", at)
      })

    const signup = traced("Signup.signup")(function*(request: SignupRequest): Effect.fn.Return<Session | User, AuthError> {
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
      // A phone sign-up's confirmation goes by the channel asked for, by GoTrue's rules; an email's ignores it.
      const channel = viaEmail ? "sms" : yield* textChannel(request.channel, Option.contains(config.sms.provider, "twilio"))
      if (!viaEmail && (request.codeChallenge ?? "") !== "") return yield* AuthError.validation("PKCE not supported for phone signups")
      const pkce = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
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

      // How long the answer takes must not tell which addresses have accounts: every branch pays for one hash, the
      // confirmation goes out after the answer, and each kind of address waits as long as the slowest kind takes
      // (EvenTiming).
      const encryptedPassword = yield* hasher.hash(Redacted.make(password))
      // Timed from after the hash, which every branch pays alike: padding a branch to a duration that includes it
      // would add its own hash on top.
      const timed = yield* timing.start(viaEmail ? "signup/email" : "signup/phone")
      const existing = viaEmail ? yield* users.findByEmail(config.jwt.aud, email!) : yield* users.findByPhone(config.jwt.aud, phone!)
      if (Option.isSome(existing)) {
        const user = existing.value
        const confirmed = viaEmail ? user.email_confirmed_at !== null : user.phone_confirmed_at !== null
        if (confirmed) {
          yield* audit.record("user_repeated_signup", { actor: user, traits: { provider: viaEmail ? "email" : "phone" } })
          const answer = yield* duplicate(email, phone, data, autoconfirm, at)
          yield* timing.done(timed, "confirmed")
          return answer
        }
        // Unconfirmed: nobody has proven the address yet, so this sign-up is as good as the first. Its confirmation
        // carries its own password and data and activates only those: the account's password is not changed now
        // (that would let anyone take the address over), and an earlier sign-up's password does not survive it.
        const resent = yield* confirmations.sendConfirmation(user, viaEmail ? "email" : channel, redirectTo, at, pkce, {
          password: encryptedPassword,
          data
        })
        const answer = userJson(resent.user, yield* identities.forUser(resent.user.id))
        yield* timing.done(timed, "unconfirmed")
        return answer
      }

      const created = yield* confirmations.register({ email, phone, encryptedPassword, data, autoconfirm, redirectTo, pkce, channel }, at)
      // Lost a race with a concurrent sign-up of the same address: answer as for any duplicate.
      if (Option.isNone(created)) return yield* duplicate(email, phone, data, autoconfirm, at)
      yield* countTagged(AuthMetrics.signUps, "provider", viaEmail ? "email" : "phone")
      if (autoconfirm) return yield* tokens.issue(created.value, "password", at, { action: "login", traits: { provider: viaEmail ? "email" : "phone" } })
      const answer = userJson(created.value, yield* identities.forUser(created.value.id))
      yield* timing.done(timed, "new")
      return answer
    })

    return { signup } as const
  }),
  dependencies: [FlowStateRepo.Default, AuditLog.Default, Users.Default, UsersRepo.Default, IdentitiesRepo.Default, AccessTokens.Default, AuthMessages.Default, PendingTokens.Default, EvenTiming.Default, Transactions.Live]
}) {}
