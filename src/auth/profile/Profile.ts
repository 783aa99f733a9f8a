import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import type { CurrentUser } from "../contract/CurrentUser.js"
import type { User } from "../contract/User.js"
import { needsAal2 } from "../domain/Assurance.js"
import { AuthError } from "../domain/AuthError.js"
import type { FactorRow } from "../domain/FactorRow.js"
import { mergeMetadata } from "../domain/MergeMetadata.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { matchesOtp } from "../domain/OtpToken.js"
import { enforcePasswordPolicy } from "../domain/PasswordPolicy.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { EMAIL_CHANGE_FLOW, type PkceChallenge, requestedPkce } from "../domain/Pkce.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { resendWait, tooSoon } from "../domain/SendWindow.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
import { type TextChannel, textChannel } from "../domain/TextChannel.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"
import { AuthMessages, messageTokenFor } from "../messages/AuthMessages.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { Sessions } from "../sessions/Sessions.js"
import { userJson } from "../users/UserJson.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { type IssuedToken, PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface UserUpdate {
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly password?: string | null | undefined
  readonly nonce?: string | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  readonly appMetadata?: Record<string, unknown> | null | undefined
  readonly redirectTo?: string | undefined
  /** An email change's PKCE parameters (auth-js with flowType pkce sends them with a new email). */
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
  /** How a new phone's code goes: sms (the default) or whatsapp. */
  readonly channel?: string | null | undefined
}

type Outgoing =
  | {
    readonly _tag: "EmailChange"
    readonly to: string
    readonly change: { readonly email: string; readonly newEmail: string }
    readonly kind: "email_change_new" | "email_change_current"
    readonly token: IssuedToken
  }
  | { readonly _tag: "Text"; readonly to: string; readonly token: IssuedToken; readonly channel: TextChannel }

/** GET /user, PUT /user and GET /reauthenticate (reference §2.12, §2.15). */
export class Profile extends Effect.Service<Profile>()("auth/Profile", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const sessions = yield* Sessions
    const hasher = yield* PasswordHasher
    const messages = yield* AuthMessages
    const random = yield* SecureRandom
    const flows = yield* FlowStateRepo
    const audit = yield* AuditLog
    const pending = yield* PendingTokens
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    // Puts back the send bookkeeping after a message that never arrived; these columns hold no unique key.
    const restore = (id: string, patch: UserPatch, at: Date) => Effect.orDie(users.update(id, patch, at))

    const toJson = (user: UserRow, factors: ReadonlyArray<FactorRow>) =>
      Effect.map(identities.forUser(user.id), (rows) => userJson(user, rows, factors))

    // The caller's identities and factors were read with the user by the bearer check: nothing left to query.
    const get = traced("Profile.get")(function*(
      user: UserRow,
      rows: ReadonlyArray<IdentityRow>,
      factors: ReadonlyArray<FactorRow>
    ): Effect.fn.Return<User> {
      return userJson(user, rows, factors)
    })

    const checkNonce = (user: UserRow, nonce: string, at: Date) =>
      Effect.gen(function*() {
        if (nonce === "") return yield* AuthError.of(400, "reauthentication_needed", "Password update requires reauthentication")
        const recipient = user.email !== null && user.email !== "" ? user.email : user.phone ?? ""
        const expiry = user.email !== null && user.email !== "" ? config.mailer.otpExp : config.sms.otpExp
        const fresh = user.reauthentication_sent_at !== null &&
          at.getTime() - user.reauthentication_sent_at.getTime() <= Duration.toMillis(expiry)
        if (!fresh || !matchesOtp(user.reauthentication_token, recipient, nonce)) {
          return yield* AuthError.of(422, "reauthentication_not_valid", "Reauthentication token is invalid or has expired")
        }
      })

    const frequencyLimit = (sentAt: Date | null, window: Duration.Duration, at: Date, channel: "email" | "sms") =>
      Option.match(resendWait(sentAt, window, at), {
        onNone: () => Effect.void,
        onSome: (seconds) => Effect.fail(tooSoon(channel, seconds))
      })

    /** Gives the user an email identity for `email`, verified: the one it has updated, else a new one. */
    const emailIdentity = (userId: string, email: string, at: Date) =>
      Effect.gen(function*() {
        const claims = { email, email_verified: true }
        const existing = (yield* identities.forUser(userId)).find((identity) => identity.provider === "email")
        if (existing !== undefined) return yield* identities.updateData(existing.id, { ...existing.identity_data, ...claims }, at)
        yield* identities.insert({
          id: yield* random.uuid(),
          provider_id: userId,
          user_id: userId,
          identity_data: { sub: userId, ...claims, phone_verified: false },
          provider: "email",
          now: at
        })
      })

    const update = traced("Profile.update")(function*(
      { factors, session, sessionId, user }: Pick<CurrentUser["Type"], "user" | "sessionId" | "session" | "factors">,
      request: UserUpdate
    ): Effect.fn.Return<User, AuthError> {
      const at = yield* now
      if (request.appMetadata !== undefined && request.appMetadata !== null && user.role !== config.jwt.adminGroupName) {
        return yield* AuthError.of(403, "not_admin", "Updating app_metadata requires admin privileges")
      }
      const password = request.password ?? ""
      const rawEmail = request.email ?? ""
      const rawPhone = request.phone ?? ""
      // A stolen first factor must not be enough to take the account over: with a verified factor, changing how one
      // signs in needs a session raised by it (GoTrue's rule, read from the session row).
      const changesSignIn = password !== "" || (rawEmail !== "" && rawEmail !== (user.email ?? "")) ||
        (rawPhone !== "" && rawPhone !== (user.phone ?? ""))
      if (changesSignIn && needsAal2(factors, session?.aal)) {
        return yield* AuthError.of(401, "insufficient_aal", "AAL2 session is required to update email or password when MFA is enabled.")
      }
      if (user.is_anonymous && password !== "" && rawEmail === "" && rawPhone === "" &&
        (user.email ?? "") === "" && (user.phone ?? "") === "") {
        return yield* AuthError.of(422, "validation_failed",
          "Updating password of an anonymous user without an email or phone is not allowed")
      }

      const patch: Record<string, unknown> = {}
      const outgoing: Array<Outgoing> = []
      let passwordChanged = false
      /** The address an anonymous user became permanent with, confirmed at once (MAILER_AUTOCONFIRM). */
      let convertedTo: string | undefined
      let emailChangeFlow = Option.none<PkceChallenge>()

      if (request.appMetadata !== undefined && request.appMetadata !== null) {
        patch["raw_app_meta_data"] = mergeMetadata(user.raw_app_meta_data ?? {}, request.appMetadata)
      }

      if (request.data !== undefined && request.data !== null) {
        patch["raw_user_meta_data"] = mergeMetadata(user.raw_user_meta_data ?? {}, request.data)
      }
      // Only a request that changes metadata is held to the limit, and before any password work: the request
      // fails whole, and bcrypt is the expensive part.
      if (patch["raw_user_meta_data"] !== undefined || patch["raw_app_meta_data"] !== undefined) {
        const tooLarge = metadataTooLarge(
          (patch["raw_user_meta_data"] ?? user.raw_user_meta_data ?? {}) as Record<string, unknown>,
          (patch["raw_app_meta_data"] ?? user.raw_app_meta_data ?? {}) as Record<string, unknown>
        )
        if (Option.isSome(tooLarge)) return yield* AuthError.validation(tooLarge.value)
      }

      if (password !== "") {
        yield* enforcePasswordPolicy(password, config.password)
        if (config.security.updatePasswordRequireReauthentication) yield* checkNonce(user, request.nonce ?? "", at)
        const current = user.encrypted_password ?? ""
        if (current !== "" && (yield* hasher.verify(Redacted.make(password), current))) {
          return yield* AuthError.of(422, "same_password", "New password should be different from the old password.")
        }
        patch["encrypted_password"] = yield* hasher.hash(Redacted.make(password))
        patch["reauthentication_token"] = ""
        passwordChanged = true
      }

      if (rawEmail !== "") {
        const email = yield* Either.mapLeft(parseEmail(rawEmail), (problem) => AuthError.validation(emailProblemMessage[problem]))
        if (email !== user.email) {
          if (yield* users.isTaken("email", email, user.id)) {
            return yield* AuthError.of(422, "email_exists", "A user with this email address has already been registered")
          }
          if (user.is_anonymous && config.mailer.autoconfirm) {
            // GoTrue confirms the address at once, as a sign-up would (user.go → emailChangeVerify, Confirm).
            Object.assign(patch, {
              email,
              email_confirmed_at: at,
              is_anonymous: false,
              raw_user_meta_data: { ...((patch["raw_user_meta_data"] ?? user.raw_user_meta_data ?? {}) as Record<string, unknown>), email_verified: true }
            })
            convertedTo = email
          } else {
            yield* frequencyLimit(user.email_change_sent_at, config.smtp.maxFrequency, at, "email")
            // In a PKCE flow both tokens are stored and linked with GoTrue's prefix, so either link's GET /verify
            // hands out the flow's code instead of a session.
            emailChangeFlow = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
            const mint = (to: string) =>
              Effect.flatMap(
                random.digits(config.mailer.otpLength),
                (otp) => pending.mint(to, otp, { pkce: Option.isSome(emailChangeFlow), mailed: true })
              )
            const token = yield* mint(email)
            Object.assign(patch, {
              email_change: email,
              email_change_token_new: token.stored,
              // A current-address token of an earlier change must not outlive it.
              email_change_token_current: "",
              email_change_confirm_status: 0,
              email_change_sent_at: at
            })
            const change = { email: user.email ?? "", newEmail: email }
            outgoing.push({ _tag: "EmailChange", to: email, change, kind: "email_change_new", token })
            // Secure email change (MAILER_SECURE_EMAIL_CHANGE_ENABLED): the current address must confirm too.
            if (config.mailer.secureEmailChangeEnabled && user.email !== null && user.email !== "") {
              const current = yield* mint(user.email)
              patch["email_change_token_current"] = current.stored
              outgoing.push({ _tag: "EmailChange", to: user.email, change, kind: "email_change_current", token: current })
            }
          }
        }
      }

      if (rawPhone !== "") {
        const phone = yield* Option.match(normalizePhone(rawPhone), {
          onNone: () => Either.left(AuthError.validation(invalidPhoneMessage)),
          onSome: Either.right
        })
        const channel = yield* textChannel(request.channel, Option.contains(config.sms.provider, "twilio"))
        if (phone !== user.phone) {
          if (yield* users.isTaken("phone", phone, user.id)) {
            return yield* AuthError.of(422, "phone_exists", "A user with this phone number has already been registered")
          }
          if (config.sms.autoconfirm) {
            Object.assign(patch, { phone, phone_confirmed_at: at, is_anonymous: false })
          } else {
            yield* frequencyLimit(user.phone_change_sent_at, config.sms.maxFrequency, at, "sms")
            const otp = yield* messages.smsOtp(phone)
            const token = yield* pending.mint(phone, otp, { pkce: false, mailed: false })
            Object.assign(patch, { phone_change: phone, phone_change_token: token.stored, phone_change_sent_at: at })
            outgoing.push({ _tag: "Text", to: phone, token, channel })
          }
        }
      }

      // One transaction for every write of the request; the messages go out after it commits.
      const updated = yield* transactions.run(Effect.gen(function*() {
        const row = Object.keys(patch).length > 0 ? yield* users.update(user.id, patch as UserPatch, at) : user
        // The signed-up user's email identity, as GoTrue's emailChangeVerify makes or updates it, so the address
        // can sign in and be linked like any other.
        if (convertedTo !== undefined) yield* emailIdentity(user.id, convertedTo, at)
        // GoTrue's LogoutAllExceptMe, unless SECURITY_PASSWORD_CHANGE_ENDS_OTHER_SESSIONS turns it off.
        if (passwordChanged && sessionId !== undefined && config.security.passwordChangeEndsOtherSessions) {
          yield* sessions.logout(user.id, sessionId, "others")
        }
        // A password change spends the reauthentication nonce, an email change the current-address token of the one before.
        yield* pending.forgetCleared(row)
        for (const message of outgoing) yield* pending.record(user.id, message._tag === "EmailChange" ? message.kind : "phone_change", message.token, at)
        if (Option.isSome(emailChangeFlow)) {
          const { challenge, method } = emailChangeFlow.value
          yield* flows.insert({
            id: yield* random.uuid(),
            userId: user.id,
            authCode: yield* random.uuid(),
            challenge,
            method,
            authenticationMethod: EMAIL_CHANGE_FLOW,
            now: at
          })
        }
        // As GoTrue: a password change has its own entry, and every update ends in user_modified.
        if (passwordChanged) yield* audit.record("user_updated_password", { actor: row })
        yield* audit.record("user_modified", { actor: row })
        return row
      })).pipe(
        // Another request took the address between our check and this write.
        Effect.catchTag("UniqueViolation", () =>
          Effect.fail(patch["phone"] !== undefined && patch["email"] === undefined && patch["email_change"] === undefined
            ? AuthError.of(422, "phone_exists", "A user with this phone number has already been registered")
            : AuthError.of(422, "email_exists", "A user with this email address has already been registered"))),
        Effect.orDie
      )
      const redirectTo = chooseRedirect(request.redirectTo, config.siteUrl, allowList)
      yield* Effect.forEach(outgoing, (message) =>
        message._tag === "EmailChange"
          ? messages.emailChange(message.to, message.change, messageTokenFor(updated, CODE_COLUMN_OF[message.kind], message.token), redirectTo)
          : messages.text(message.to, messageTokenFor(updated, "phone_change_token", message.token), "phone_change", message.channel)
      ).pipe(
          // Nothing (or not everything) arrived: let the user ask again at once.
          Effect.tapError(() => restore(user.id, {
            email_change_sent_at: user.email_change_sent_at,
            phone_change_sent_at: user.phone_change_sent_at
          }, at))
        )
      return yield* toJson(updated, factors)
    })

    const reauthenticate = traced("Profile.reauthenticate")(function*(user: UserRow): Effect.fn.Return<void, AuthError> {
      const at = yield* now
      const email = user.email ?? ""
      const phone = user.phone ?? ""
      if (email === "" && phone === "") {
        return yield* AuthError.of(422, "validation_failed", "Reauthentication requires the user to have an email or a phone number")
      }
      if (email !== "" && user.email_confirmed_at === null) {
        return yield* AuthError.of(422, "email_not_confirmed", "Please verify your email first.")
      }
      if (email === "" && user.phone_confirmed_at === null) {
        return yield* AuthError.of(422, "phone_not_confirmed", "Please verify your phone first.")
      }
      const viaEmail = email !== ""
      const channel = viaEmail ? "email" : "sms"
      const window = viaEmail ? config.smtp.maxFrequency : config.sms.maxFrequency
      yield* frequencyLimit(user.reauthentication_sent_at, window, at, channel)
      const otp = yield* (viaEmail ? random.digits(config.mailer.otpLength) : messages.smsOtp(phone))
      const token = yield* pending.mint(viaEmail ? email : phone, otp, { pkce: false, mailed: false })
      const claimed = yield* transactions.run(Effect.gen(function*() {
        const row = yield* users.claimSend(user.id, "reauthentication_sent_at", window, at, { reauthentication_token: token.stored })
        if (Option.isNone(row)) return Option.none()
        return Option.some({ row: row.value, replaced: yield* pending.recordReauthentication(user.id, token, at) })
      })).pipe(Effect.orDie)
      if (Option.isNone(claimed)) return yield* tooSoon(channel, Math.ceil(Duration.toSeconds(window)))
      const sent = messageTokenFor(user, "reauthentication_token", token)
      yield* (viaEmail ? messages.reauthentication(email, sent) : messages.text(phone, sent, "reauthentication")).pipe(
        Effect.tapError(() =>
          Effect.zipRight(
            restore(user.id, {
              reauthentication_sent_at: user.reauthentication_sent_at,
              reauthentication_token: user.reauthentication_token
            }, at),
            pending.putBack(claimed.value.replaced)
          )
        )
      )
      yield* audit.record("user_reauthenticate_requested", { actor: claimed.value.row })
    })

    return { get, update, reauthenticate } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, IdentitiesRepo.Default, Sessions.Default, AuthMessages.Default, PendingTokens.Default, AuditLog.Default, Transactions.Live]
}) {}
