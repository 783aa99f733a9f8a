import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { type PkceChallenge, requestedPkce } from "../domain/Pkce.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { type TextChannel, textChannel } from "../domain/TextChannel.js"
import type { UserRow } from "../domain/UserRow.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { Confirmations } from "../messages/Confirmations.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface OtpRequest {
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  /** Absent or null means true, as in GoTrue. */
  readonly createUser?: boolean | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  readonly channel?: string | null | undefined
  readonly redirectTo?: string | undefined
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
}

export interface OtpSent {
  readonly message_id?: string
}

/**
 * POST /otp and POST /magiclink (reference §2.8). An address with no confirmed user behind it is signed up, with
 * a password nobody knows, and gets the sign-up confirmation; a confirmed email gets a magic link and code (in
 * recovery_token), a confirmed phone a code (in confirmation_token).
 */
export class Otp extends Effect.Service<Otp>()("auth/Otp", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const hasher = yield* PasswordHasher
    const random = yield* SecureRandom
    const confirmations = yield* Confirmations
    const allowList = compileAllowList(config.uriAllowList)

    // Nobody is told this password; it only makes the new user an ordinary email or phone user.
    const unknownPassword = Effect.gen(function*() {
      const password = `${yield* random.uuid()}${yield* random.uuid()}`.replaceAll("-", "")
      return yield* hasher.hash(Redacted.make(password))
    })

    /**
     * The sign-up half: None when the address already has a confirmed user; otherwise the user exists afterwards
     * and Some says whether it is now confirmed (autoconfirm) and so should get the sign-in message too.
     */
    const signUpIfNew = (
      existing: Option.Option<UserRow>,
      contact: { readonly email: string | null; readonly phone: string | null },
      request: OtpRequest,
      redirectTo: string,
      at: Date,
      pkce: Option.Option<PkceChallenge>,
      channel: TextChannel = "sms"
    ): Effect.Effect<Option.Option<Option.Option<UserRow>>, AuthError> =>
      Effect.gen(function*() {
        const viaEmail = contact.email !== null
        if (Option.isSome(existing)) {
          const user = existing.value
          if ((viaEmail ? user.email_confirmed_at : user.phone_confirmed_at) !== null) return Option.none()
          yield* confirmations.sendConfirmation(user, viaEmail ? "email" : channel, redirectTo, at, pkce)
          return Option.some(Option.none())
        }
        if (config.disableSignup) return yield* AuthError.of(422, "signup_disabled", "Signups not allowed for this instance")
        const autoconfirm = viaEmail ? config.mailer.autoconfirm : config.sms.autoconfirm
        const created = yield* confirmations.register({
          ...contact,
          encryptedPassword: yield* unknownPassword,
          data: request.data ?? {},
          autoconfirm,
          redirectTo,
          pkce,
          channel
        }, at)
        // Lost a race for the address: the other request sent what was needed.
        return Option.some(autoconfirm ? created : Option.none())
      })

    const magicLink = (rawEmail: string, request: OtpRequest, redirectTo: string, at: Date, pkce: Option.Option<PkceChallenge>) =>
      Effect.gen(function*() {
        if (!config.externalEmailEnabled) return yield* AuthError.of(422, "email_provider_disabled", "Email logins are disabled")
        if (!config.externalEmailMagicLinkEnabled) {
          return yield* AuthError.of(422, "email_provider_disabled", "Login with magic link is disabled")
        }
        const email = yield* Either.mapLeft(parseEmail(rawEmail), (problem) => AuthError.validation(emailProblemMessage[problem]))
        const existing = yield* users.findByEmail(config.jwt.aud, email)
        if (Option.isNone(existing) && request.createUser === false) {
          return yield* AuthError.of(422, "otp_disabled", "Signups not allowed for otp")
        }
        const signedUp = yield* signUpIfNew(existing, { email, phone: null }, request, redirectTo, at, pkce)
        const user = Option.isNone(signedUp) ? existing : signedUp.value
        if (Option.isSome(user)) yield* confirmations.sendLink(user.value, "magiclink", redirectTo, at, pkce)
        return {}
      })

    const smsOtp = (rawPhone: string, request: OtpRequest, redirectTo: string, at: Date) =>
      Effect.gen(function*() {
        if (!config.externalPhoneEnabled) return yield* AuthError.of(400, "phone_provider_disabled", "Unsupported phone provider")
        const phone = yield* Option.match(normalizePhone(rawPhone), {
          onNone: () => Either.left(AuthError.validation(invalidPhoneMessage)),
          onSome: Either.right
        })
        const existing = yield* users.findByPhone(config.jwt.aud, phone)
        if (Option.isNone(existing) && request.createUser === false) {
          return yield* AuthError.of(422, "otp_disabled", "Signups not allowed for otp")
        }
        // After otp_disabled, as in GoTrue. WhatsApp goes only through Twilio (GoTrue's Twilio Verify too, which
        // Gatehouse has not).
        const channel = yield* textChannel(request.channel, Option.contains(config.sms.provider, "twilio"))
        const signedUp = yield* signUpIfNew(existing, { email: null, phone }, request, redirectTo, at, Option.none(), channel)
        const user = Option.isNone(signedUp) ? existing : signedUp.value
        if (Option.isNone(user)) return {}
        const sent = yield* confirmations.sendConfirmation(user.value, channel, redirectTo, at)
        return sent.messageId === undefined ? {} : { message_id: sent.messageId }
      })

    const otp = traced("Otp.otp")(function*(request: OtpRequest): Effect.fn.Return<OtpSent, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const email = request.email ?? ""
      const phone = request.phone ?? ""
      const tooLarge = metadataTooLarge(request.data ?? {}, {})
      if (Option.isSome(tooLarge)) return yield* AuthError.validation(tooLarge.value)
      if (email !== "" && phone !== "") {
        return yield* AuthError.validation("Only an email address or phone number should be provided")
      }
      if (email !== "" && (request.channel ?? "") !== "") {
        return yield* AuthError.validation("Channel should only be specified with Phone OTP")
      }
      const pkce = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
      const redirectTo = chooseRedirect(request.redirectTo, config.siteUrl, allowList)
      if (email !== "") return yield* magicLink(email, request, redirectTo, at, pkce)
      if (phone !== "") return yield* smsOtp(phone, request, redirectTo, at)
      return yield* AuthError.validation("One of email or phone must be set")
    })

    /** POST /magiclink: /otp's email path, always creating the user. */
    const magiclink = traced("Otp.magiclink")(function*(request: OtpRequest): Effect.fn.Return<OtpSent, AuthError> {
      if ((request.email ?? "") === "") return yield* AuthError.validation("Password recovery requires an email")
      return yield* otp({
        email: request.email,
        data: request.data,
        redirectTo: request.redirectTo,
        codeChallenge: request.codeChallenge,
        codeChallengeMethod: request.codeChallengeMethod
      })
    })

    return { otp, magiclink } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, Users.Default, AuthMessages.Default, PendingTokens.Default, AuditLog.Default, Transactions.Live]
}) {}
