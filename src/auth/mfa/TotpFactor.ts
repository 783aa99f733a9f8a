import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { AuthError } from "../domain/AuthError.js"
import { defaultIssuer, otpAuthUri } from "../../domain/OtpAuthUri.js"
import { isTotpReplay, TOTP_SECRET_BYTES, totpSecret, verifyTotp } from "../../domain/Totp.js"
import { requireCode } from "../domain/FactorChallenge.js"
import type { FactorKind } from "../factors/FactorKind.js"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { qrCodeSvg } from "../factors/QrCode.js"
import { traced } from "../../platform/Traced.js"

const invalidCode = AuthError.of(422, "mfa_verification_failed", "Invalid TOTP code entered")

/**
 * The TOTP factor (GoTrue's parameters: SHA-1, 6 digits, 30 s, ±1 step). Beyond GoTrue, a code is accepted once per
 * factor: a match at a time step no later than the last accepted one is refused as an invalid code, so a code seen
 * over a shoulder or through a phishing proxy cannot raise a second session (GoTrue only spends the challenge).
 */
export class TotpFactor extends Effect.Service<TotpFactor>()("auth/TotpFactor", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const random = yield* SecureRandom
    const repo = yield* FactorsRepo

    const kind: FactorKind = {
      type: "totp",
      beforeEnroll: () => Effect.void,
      enroll: traced("TotpFactor.enroll")(function*({ issuer, user }) {
        const chosen = issuer !== "" ? Option.some(issuer) : defaultIssuer(config.siteUrl)
        if (Option.isNone(chosen)) return yield* AuthError.of(500, "unexpected_failure", "site url is improperly formatted")
        const secret = totpSecret(yield* random.bytes(TOTP_SECRET_BYTES))
        // The account name the app shows under the issuer. GoTrue takes only the email and answers a phone-only user
        // with 500 "Error generating QR Code"; the phone names that account as well.
        const account = user.email !== null && user.email !== "" ? user.email : user.phone ?? ""
        const uri = otpAuthUri({ issuer: chosen.value, account, secret })
        if (Option.isNone(uri)) return yield* AuthError.validation("A TOTP factor needs an email address or a phone number to name its account")
        // Only a client's issuer can make the URI too long for a QR code (GoTrue: 500).
        const svg = yield* qrCodeSvg(uri.value).pipe(
          Effect.mapError(() => AuthError.validation("issuer is too long to fit in a QR code"))
        )
        return { secret, phone: null, answer: { totp: { qr_code: svg, secret, uri: uri.value } } }
      }),
      // GoTrue writes "" as a TOTP challenge's otp_code; the body is never read.
      challenge: () => Effect.succeed({ otpCode: "", webAuthnSessionData: null, answer: {} }),
      checkVerifyRequest: requireCode,
      verify: traced("TotpFactor.verify")(function*({ code, factor, now }) {
        const match = verifyTotp(factor.secret ?? "", code, now)
        if (Option.isNone(match)) return { _tag: "Rejected", error: invalidCode } as const
        if (isTotpReplay(yield* repo.lastTotpStep(factor.id), match.value.timeStep)) {
          return { _tag: "Rejected", error: invalidCode } as const
        }
        yield* repo.noteTotpStep(factor.id, match.value.timeStep, now)
        return { _tag: "Accepted", update: {} } as const
      }),
      spentChallenge: "mark_verified",
      deleteChallengeAtFailureLimit: false
    }
    return kind
  }),
  dependencies: [FactorsRepo.Default]
}) {}
