import * as Option from "effect/Option"
import { needsAal2 } from "./Assurance.js"
import { AuthError } from "./AuthError.js"
import type { FactorRow } from "./FactorRow.js"

export interface FactorLimits {
  readonly maxEnrolledFactors: number
  readonly maxVerifiedFactors: number
}

/**
 * GoTrue's validateFactors, judged over the user's factors as they are once abandoned enrolments are gone: why a new
 * factor named `friendlyName` may not be enrolled from a session at `sessionAal`, in GoTrue's order (a name the
 * user already has, exactly as written, "" included; either cap; a verified factor and a session below aal2), or
 * None.
 */
export const enrolmentRefusal = (
  factors: ReadonlyArray<Pick<FactorRow, "friendly_name" | "status">>,
  friendlyName: string,
  limits: FactorLimits,
  sessionAal: string | null | undefined
): Option.Option<AuthError> => {
  if (factors.some((factor) => (factor.friendly_name ?? "") === friendlyName)) {
    return Option.some(AuthError.of(422, "mfa_factor_name_conflict",
      `A factor with the friendly name "${friendlyName}" for this user already exists`))
  }
  const verified = factors.filter((factor) => factor.status === "verified").length
  if (factors.length >= limits.maxEnrolledFactors || verified >= limits.maxVerifiedFactors) {
    return Option.some(AuthError.of(422, "too_many_enrolled_mfa_factors", "Maximum number of verified factors reached, unenroll to continue"))
  }
  if (needsAal2(factors, sessionAal)) return Option.some(AuthError.of(403, "insufficient_aal", "AAL2 required to enroll a new factor"))
  return Option.none()
}
