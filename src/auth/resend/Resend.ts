import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { requestedPkce } from "../domain/Pkce.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { Confirmations } from "../messages/Confirmations.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface ResendRequest {
  readonly type?: string | null | undefined
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly redirectTo?: string | undefined
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
}

export interface ResendSent {
  readonly message_id?: string
}

export const RESEND_TYPES = ["signup", "email_change", "sms", "phone_change"] as const
type ResendType = (typeof RESEND_TYPES)[number]
const isResendType = (type: string): type is ResendType => (RESEND_TYPES as ReadonlyArray<string>).includes(type)

/**
 * POST /resend (reference §2.11): a pending confirmation, email change or phone change, sent again with a fresh
 * code. An unknown user, or nothing pending, gets `{}` and nothing is sent, so the answer tells nothing.
 */
export class Resend extends Effect.Service<Resend>()("auth/Resend", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const confirmations = yield* Confirmations
    const allowList = compileAllowList(config.uriAllowList)
    const aud = config.jwt.aud

    const emailOf = (raw: string) => Either.mapLeft(parseEmail(raw), (problem) => AuthError.validation(emailProblemMessage[problem]))
    const phoneOf = (raw: string) =>
      Option.match(normalizePhone(raw), { onNone: () => Either.left(AuthError.validation(invalidPhoneMessage)), onSome: Either.right })

    const resend = traced("Resend.resend")(function*(request: ResendRequest): Effect.fn.Return<ResendSent, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const type = request.type ?? ""
      const rawEmail = request.email ?? ""
      const rawPhone = request.phone ?? ""
      if (!isResendType(type)) {
        return yield* AuthError.validation("Missing one of these types: signup, email_change, sms, phone_change")
      }
      if (rawEmail !== "" && rawPhone !== "") {
        return yield* AuthError.validation("Only an email address or phone number should be provided.")
      }
      const byEmail = type === "signup" || type === "email_change"
      if (byEmail && rawEmail === "") return yield* AuthError.validation("Type provided requires an email address")
      if (!byEmail && rawPhone === "") return yield* AuthError.validation("Type provided requires a phone number")
      const pkce = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
      const redirectTo = chooseRedirect(request.redirectTo, config.siteUrl, allowList)
      switch (type) {
        case "signup": {
          const user = yield* users.findByEmail(aud, yield* emailOf(rawEmail))
          if (Option.isNone(user) || user.value.email_confirmed_at !== null) return {}
          yield* confirmations.sendConfirmation(user.value, "email", redirectTo, at, pkce)
          return {}
        }
        case "sms": {
          const user = yield* users.findByPhone(aud, yield* phoneOf(rawPhone))
          if (Option.isNone(user) || user.value.phone_confirmed_at !== null) return {}
          const sent = yield* confirmations.sendConfirmation(user.value, "sms", redirectTo, at)
          return sent.messageId === undefined ? {} : { message_id: sent.messageId }
        }
        case "email_change": {
          const user = yield* users.findByEmailChange(aud, yield* emailOf(rawEmail))
          if (Option.isNone(user) || (user.value.email_change ?? "") === "") return {}
          yield* confirmations.resendEmailChange(user.value, redirectTo, at, pkce)
          return {}
        }
        case "phone_change": {
          const user = yield* users.findByPhoneChange(aud, yield* phoneOf(rawPhone))
          if (Option.isNone(user) || (user.value.phone_change ?? "") === "") return {}
          return { message_id: yield* confirmations.resendPhoneChange(user.value, at) }
        }
      }
    })

    return { resend } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, Users.Default, AuthMessages.Default, PendingTokens.Default, AuditLog.Default, Transactions.Live]
}) {}
