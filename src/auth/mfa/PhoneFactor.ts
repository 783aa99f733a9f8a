import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { AuthError } from "../domain/AuthError.js"
import { requireCode } from "../domain/FactorChallenge.js"
import { sameSecret } from "../domain/OtpToken.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import { resendWait, tooSoon } from "../domain/SendWindow.js"
import { textChannel } from "../domain/TextChannel.js"
import type { FactorKind } from "../factors/FactorKind.js"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { traced } from "../../platform/Traced.js"

const badJson = AuthError.of(400, "bad_json", "Could not parse request body as JSON: unexpected end of JSON input")

/**
 * The phone factor: a numeric code of MFA_PHONE_OTP_LENGTH digits texted in MFA_PHONE_TEMPLATE, at most one text per
 * MFA_PHONE_MAX_FREQUENCY per factor, stored in the challenge as GoTrue stores it (plain text: it lives for the
 * challenge's few minutes, and the per-factor failure limit deletes it once guessing has gone on too long).
 */
export class PhoneFactor extends Effect.Service<PhoneFactor>()("auth/PhoneFactor", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const random = yield* SecureRandom
    const repo = yield* FactorsRepo
    const messages = yield* AuthMessages
    const whatsappAvailable = Option.contains(config.sms.provider, "twilio")

    const kind: FactorKind = {
      type: "phone",
      beforeEnroll: traced("PhoneFactor.beforeEnroll")(function*({ factors, phone, user }) {
        if (phone === "") return yield* AuthError.validation("Phone number required to enroll Phone factor")
        const digits = normalizePhone(phone)
        if (Option.isNone(digits)) return yield* AuthError.validation(invalidPhoneMessage)
        const same = factors.filter((factor) => factor.factor_type === "phone" && factor.phone === digits.value)
        if (same.some((factor) => factor.status === "verified")) {
          return yield* AuthError.of(422, "mfa_verified_factor_exists",
            "A verified phone factor already exists, unenroll the existing factor to continue")
        }
        if (same.length > 0) yield* repo.removeUnverifiedPhone(user.id, digits.value)
      }),
      // The answer names the number exactly as sent; the factor stores its digits.
      enroll: ({ phone }) =>
        Effect.succeed({ secret: null, phone: Option.getOrElse(normalizePhone(phone), () => phone), answer: { phone } }),
      challenge: traced("PhoneFactor.challenge")(function*({ body, challengeId, factor, now }) {
        if (body === null) return yield* badJson
        const channel = yield* Either.match(textChannel(body.channel, whatsappAvailable), {
          onLeft: Effect.fail,
          onRight: Effect.succeed
        })
        const wait = resendWait(factor.last_challenged_at, config.mfa.phone.maxFrequency, now)
        if (Option.isSome(wait)) return yield* tooSoon("sms", wait.value)
        const code = yield* random.digits(config.mfa.phone.otpLength)
        yield* messages.mfaText(factor.phone ?? "", code, { userId: factor.user_id, challengeId }, channel)
        return { otpCode: code, webAuthnSessionData: null, answer: {} }
      }),
      checkVerifyRequest: requireCode,
      verify: ({ challenge, code }) =>
        Effect.succeed(
          // Constant time, as GoTrue's subtle.ConstantTimeCompare; an empty stored code never matches.
          sameSecret(challenge.otp_code, code)
            ? { _tag: "Accepted", update: {} } as const
            : { _tag: "Rejected", error: AuthError.of(422, "mfa_verification_failed", "Invalid MFA Phone code entered") } as const
        ),
      spentChallenge: "mark_verified",
      deleteChallengeAtFailureLimit: true
    }
    return kind
  }),
  dependencies: [FactorsRepo.Default, AuthMessages.Default]
}) {}
