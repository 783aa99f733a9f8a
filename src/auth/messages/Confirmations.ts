import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import type { SignupClaim, TokenKind } from "../domain/LinkToken.js"
import { EMAIL_CHANGE_FLOW, type PkceChallenge } from "../domain/Pkce.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
import { resendWait, tooSoon } from "../domain/SendWindow.js"
import type { TextChannel } from "../domain/TextChannel.js"
import type { UserRow } from "../domain/UserRow.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { AuditLog } from "../users/AuditLog.js"
import { type IssuedToken, PendingTokens } from "../users/PendingTokens.js"
import { Users } from "../users/Users.js"
import { type SentAtColumn, type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { AuthMessages, messageTokenFor } from "./AuthMessages.js"

export type LinkKind = "recovery" | "magiclink"

/** What a sign-up makes: an email or a phone user with a hashed password, confirmed or waiting for the code. */
export interface Registrant {
  readonly email: string | null
  readonly phone: string | null
  readonly encryptedPassword: string
  readonly data: Record<string, unknown>
  readonly autoconfirm: boolean
  readonly redirectTo: string
  /** The request's PKCE challenge, when it started a PKCE flow. */
  readonly pkce?: Option.Option<PkceChallenge>
  /** How a phone's confirmation code goes (default sms). */
  readonly channel?: TextChannel
}

export interface Sent {
  readonly user: UserRow
  /** The SMS provider's id for a text; undefined for a mail. */
  readonly messageId: string | undefined
}

export interface ConfirmationsShape {
  /**
   * Sends (or re-sends) the sign-up confirmation, by mail or to the phone by `channel`, honouring
   * SMTP_MAX_FREQUENCY / SMS_MAX_FREQUENCY. `repeated` is what a sign-up of the already signed-up, unconfirmed
   * address brings: its confirmation then activates only that.
   */
  readonly sendConfirmation: (
    user: UserRow,
    channel: "email" | TextChannel,
    redirectTo: string,
    at: Date,
    pkce?: Option.Option<PkceChallenge>,
    repeated?: SignupClaim
  ) => Effect.Effect<Sent, AuthError>
  /**
   * Creates the user and, unless autoconfirmed, sends its confirmation; when that fails the user is removed again.
   * None: another request created the address first.
   */
  readonly register: (registrant: Registrant, at: Date) => Effect.Effect<Option.Option<UserRow>, AuthError>
  /**
   * Sends a pending email change's confirmations again, with fresh codes: to the new address, and to the current
   * one when MAILER_SECURE_EMAIL_CHANGE_ENABLED.
   */
  readonly resendEmailChange: (
    user: UserRow,
    redirectTo: string,
    at: Date,
    pkce?: Option.Option<PkceChallenge>
  ) => Effect.Effect<UserRow, AuthError>
  /**
   * After an external sign-in refused for an unproven email (the user and identity kept): mails the sign-up
   * confirmation, as GoTrue does, so confirming it lets the next sign-in through. Best effort: the sign-in is
   * refused either way, and a window still closed or a mail that fails only means the user asks again later.
   */
  readonly confirmExternalEmail: (user: UserRow, redirectTo: string, at: Date) => Effect.Effect<void>
  /** Texts a pending phone change's code again, a fresh one; the answer is the provider's message id. */
  readonly resendPhoneChange: (user: UserRow, at: Date) => Effect.Effect<string, AuthError>
  /** A recovery or magic-link mail, its code in recovery_token; the window is shared by both kinds, as in GoTrue. */
  readonly sendLink: (
    user: UserRow,
    kind: LinkKind,
    redirectTo: string,
    at: Date,
    pkce?: Option.Option<PkceChallenge>
  ) => Effect.Effect<UserRow, AuthError>
}

/**
 * In a PKCE flow (a request with a code_challenge) a mail's token is stored, and linked, with GoTrue's `pkce_`
 * prefix, and a flow_state remembers the challenge for the user and the kind of mail: the link's GET /verify then
 * hands out that flow's auth code instead of a session. Texts have no PKCE flow.
 *
 * The messages several features send on a user's behalf (sign-up, /otp, /magiclink, /recover, /resend), each
 * with the same bookkeeping: the frequency window is claimed with one conditional UPDATE and given back when the
 * message never arrived. Built inside the services that use it, from the floors they already depend on.
 */
export const Confirmations: Effect.Effect<
  ConfirmationsShape,
  never,
  AuthConfig | UsersRepo | Users | AuthMessages | SecureRandom | Transactions | FlowStateRepo | AuditLog | PendingTokens
> = Effect.gen(function*() {
  const config = yield* AuthConfig
  const users = yield* UsersRepo
  const newUsers = yield* Users
  const messages = yield* AuthMessages
  const random = yield* SecureRandom
  const transactions = yield* Transactions
  const flows = yield* FlowStateRepo
  const audit = yield* AuditLog
  const pending = yield* PendingTokens
  // Puts back the send bookkeeping after a message that never arrived; these columns hold no unique key.
  const restore = (id: string, patch: UserPatch, at: Date) => Effect.orDie(users.update(id, patch, at))
  /** What `user` held in the columns a send sets: the sent-at column and those of its patch. */
  const previousValues = (user: UserRow, sentAt: SentAtColumn, patch: UserPatch): UserPatch =>
    Object.fromEntries([sentAt, ...Object.keys(patch)].map((column) => [column, user[column as keyof UserRow] ?? null])) as UserPatch

  const startFlow = (user: UserRow, pkce: Option.Option<PkceChallenge>, authenticationMethod: string, at: Date) =>
    Option.match(pkce, {
      onNone: () => Effect.void,
      onSome: ({ challenge, method }) =>
        Effect.gen(function*() {
          const id = yield* random.uuid()
          const authCode = yield* random.uuid()
          yield* flows.insert({ id, userId: user.id, authCode, challenge, method, authenticationMethod, now: at })
        })
    })

  /**
   * Stores a newly issued token, in the users column when the user's frequency window allows it (`claimSend`) and
   * in pending_tokens, in one transaction. None: another request sent one meanwhile.
   */
  const claimToken = (
    user: UserRow,
    sentAt: SentAtColumn,
    window: Duration.Duration,
    at: Date,
    patch: UserPatch,
    tokens: ReadonlyArray<readonly [TokenKind, IssuedToken]>,
    repeated?: SignupClaim
  ) =>
    transactions.run(Effect.gen(function*() {
      const claimed = yield* users.claimSend(user.id, sentAt, window, at, patch)
      if (Option.isNone(claimed)) return Option.none()
      const previous = yield* Effect.forEach(tokens, ([kind, token]) => pending.record(user.id, kind, token, at, repeated))
      // The message never arrived, so the user must be able to ask again at once: the window goes back, and the
      // earlier message's tokens work again.
      const undo = Effect.zipRight(
        restore(user.id, previousValues(user, sentAt, patch), at),
        Effect.forEach(previous, pending.putBack, { discard: true })
      )
      return Option.some({ user: claimed.value, undo })
    })).pipe(Effect.catchTag("SqlError", Effect.die))

  const sendConfirmation = (
    user: UserRow,
    channel: "email" | TextChannel,
    redirectTo: string,
    at: Date,
    requested: Option.Option<PkceChallenge> = Option.none(),
    repeated?: SignupClaim
  ) =>
    Effect.gen(function*() {
      const viaEmail = channel === "email"
      const window = viaEmail ? config.smtp.maxFrequency : config.sms.maxFrequency
      const wait = resendWait(user.confirmation_sent_at, window, at)
      if (Option.isSome(wait)) return yield* tooSoon(viaEmail ? "email" : "sms", wait.value)
      const recipient = viaEmail ? user.email! : user.phone!
      const otp = yield* (viaEmail ? random.digits(config.mailer.otpLength) : messages.smsOtp(recipient))
      const pkce = viaEmail ? requested : Option.none()
      const token = yield* pending.mint(recipient, otp, { pkce: Option.isSome(pkce), mailed: viaEmail })
      const claimed = yield* claimToken(user, "confirmation_sent_at", window, at, { confirmation_token: token.stored }, [["confirmation", token]], repeated)
      if (Option.isNone(claimed)) return yield* tooSoon(viaEmail ? "email" : "sms", Math.ceil(Duration.toSeconds(window)))
      yield* startFlow(user, pkce, "email/signup", at)
      const { undo } = claimed.value
      const sent = messageTokenFor(user, "confirmation_token", token)
      const messageId = viaEmail
        ? yield* messages.confirmation(recipient, sent, redirectTo, undo).pipe(Effect.tapError(() => undo), Effect.as(undefined))
        : yield* messages.text(recipient, sent, "sms", channel).pipe(Effect.tapError(() => undo))
      yield* audit.record("user_confirmation_requested", { actor: claimed.value.user, traits: { provider: viaEmail ? "email" : "phone" } })
      return { user: claimed.value.user, messageId }
    })

  const register = (registrant: Registrant, at: Date) =>
    Effect.gen(function*() {
      const viaEmail = registrant.email !== null
      const provider = viaEmail ? "email" : "phone"
      // An autoconfirmed user is signed up now; any other when the confirmation comes back (see Verify).
      const created = yield* transactions.run(Effect.tap(newUsers.create({
        aud: config.jwt.aud,
        role: config.jwt.defaultGroupName,
        email: registrant.email,
        phone: registrant.phone,
        encryptedPassword: registrant.encryptedPassword,
        userMetadata: registrant.data,
        provider: viaEmail ? "email" : "phone",
        emailConfirmedAt: viaEmail && registrant.autoconfirm ? at : null,
        phoneConfirmedAt: !viaEmail && registrant.autoconfirm ? at : null,
        isAnonymous: false,
        madeBy: "signup",
        now: at
      }), (actor) => registrant.autoconfirm ? audit.record("user_signedup", { actor, traits: { provider } }) : Effect.void)).pipe(
        Effect.map(Option.some),
        Effect.catchTag("UniqueViolation", () => Effect.succeedNone),
        Effect.orDie
      )
      if (Option.isNone(created) || registrant.autoconfirm) return created
      const sent = yield* sendConfirmation(created.value, viaEmail ? "email" : registrant.channel ?? "sms", registrant.redirectTo, at, registrant.pkce).pipe(
        // Nothing was sent, so nobody can confirm this account: remove it rather than leave it half made.
        Effect.tapError(() => users.remove(created.value.id))
      )
      return Option.some(sent.user)
    })

  const sendLink = (
    user: UserRow,
    kind: LinkKind,
    redirectTo: string,
    at: Date,
    pkce: Option.Option<PkceChallenge> = Option.none()
  ) =>
    Effect.gen(function*() {
      const window = Duration.max(config.smtp.maxFrequency, config.smtp.linkMinInterval)
      const wait = resendWait(user.recovery_sent_at, window, at)
      if (Option.isSome(wait)) return yield* tooSoon("email", wait.value)
      const email = user.email!
      const token = yield* pending.mint(email, yield* random.digits(config.mailer.otpLength), { pkce: Option.isSome(pkce), mailed: true })
      const claimed = yield* claimToken(user, "recovery_sent_at", window, at, { recovery_token: token.stored }, [["recovery", token]])
      if (Option.isNone(claimed)) return yield* tooSoon("email", Math.ceil(Duration.toSeconds(window)))
      yield* startFlow(user, pkce, kind, at)
      const { undo } = claimed.value
      yield* messages.link(kind, email, messageTokenFor(user, "recovery_token", token), redirectTo, undo).pipe(Effect.tapError(() => undo))
      // GoTrue files a magic link under the same action as a recovery mail: both are sign-in links.
      yield* audit.record("user_recovery_requested", { actor: claimed.value.user })
      return claimed.value.user
    })

  const resendEmailChange = (
    user: UserRow,
    redirectTo: string,
    at: Date,
    pkce: Option.Option<PkceChallenge> = Option.none()
  ) =>
    Effect.gen(function*() {
      const window = config.smtp.maxFrequency
      const wait = resendWait(user.email_change_sent_at, window, at)
      if (Option.isSome(wait)) return yield* tooSoon("email", wait.value)
      const newEmail = user.email_change!
      const change = { email: user.email ?? "", newEmail }
      const mint = (to: string) =>
        Effect.flatMap(random.digits(config.mailer.otpLength), (otp) => pending.mint(to, otp, { pkce: Option.isSome(pkce), mailed: true }))
      const mails: Array<readonly [TokenKind, string, IssuedToken]> = [["email_change_new", newEmail, yield* mint(newEmail)]]
      // As when the change was asked for: with secure email change on, a user with an address confirms from it too.
      if (config.mailer.secureEmailChangeEnabled && (user.email ?? "") !== "") {
        mails.push(["email_change_current", user.email!, yield* mint(user.email!)])
      }
      const patch: UserPatch = {
        email_change_token_new: mails[0]![2].stored,
        email_change_token_current: mails[1]?.[2].stored ?? "",
        email_change_confirm_status: 0
      }
      const claimed = yield* claimToken(user, "email_change_sent_at", window, at, patch, mails.map(([kind, , token]) => [kind, token] as const))
      if (Option.isNone(claimed)) return yield* tooSoon("email", Math.ceil(Duration.toSeconds(window)))
      yield* startFlow(user, pkce, EMAIL_CHANGE_FLOW, at)
      yield* Effect.forEach(mails, ([kind, to, token]) =>
        messages.emailChange(to, change, messageTokenFor(user, CODE_COLUMN_OF[kind], token), redirectTo)).pipe(
        Effect.tapError(() => claimed.value.undo)
      )
      return claimed.value.user
    })

  const resendPhoneChange = (user: UserRow, at: Date) =>
    Effect.gen(function*() {
      const window = config.sms.maxFrequency
      const wait = resendWait(user.phone_change_sent_at, window, at)
      if (Option.isSome(wait)) return yield* tooSoon("sms", wait.value)
      const phone = user.phone_change!
      const token = yield* pending.mint(phone, yield* messages.smsOtp(phone), { pkce: false, mailed: false })
      const claimed = yield* claimToken(user, "phone_change_sent_at", window, at, { phone_change_token: token.stored }, [["phone_change", token]])
      if (Option.isNone(claimed)) return yield* tooSoon("sms", Math.ceil(Duration.toSeconds(window)))
      return yield* messages.text(phone, messageTokenFor(user, "phone_change_token", token), "phone_change").pipe(
        Effect.tapError(() => claimed.value.undo)
      )
    })

  const confirmExternalEmail = (user: UserRow, redirectTo: string, at: Date) =>
    (user.email ?? "") === "" || user.email_confirmed_at !== null || config.mailer.autoconfirm
      ? Effect.void
      : sendConfirmation(user, "email", redirectTo, at).pipe(
        Effect.tapError((error) => Effect.logInfo(`no confirmation mailed after an external sign-in: ${error.code}`)),
        Effect.ignore
      )

  return { sendConfirmation, register, sendLink, resendEmailChange, resendPhoneChange, confirmExternalEmail } satisfies ConfirmationsShape
})
