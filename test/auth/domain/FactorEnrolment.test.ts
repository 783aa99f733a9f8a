import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc, Option } from "effect"
import { enrolmentRefusal } from "../../../src/auth/domain/FactorEnrolment.js"

const factor = fc.record({
  friendly_name: fc.option(fc.constantFrom("", "phone", "laptop", "key"), { nil: null }),
  status: fc.constantFrom("verified" as const, "unverified" as const)
})
const limits = fc.record({ maxEnrolledFactors: fc.integer({ min: 0, max: 5 }), maxVerifiedFactors: fc.integer({ min: 0, max: 5 }) })

const codeOf = (refusal: ReturnType<typeof enrolmentRefusal>) => Option.map(refusal, (error) => [error.status, error.code])

describe("FactorEnrolment (GoTrue's validateFactors)", () => {
  it("refuses in GoTrue's order: a taken name, then a cap, then a verified factor with a session below aal2", () => {
    fc.assert(fc.property(fc.array(factor, { maxLength: 6 }), fc.constantFrom("", "phone", "new"), limits,
      fc.constantFrom("aal1", "aal2", null, undefined), (factors, name, caps, aal) => {
        const verified = factors.filter((f) => f.status === "verified").length
        const expected = factors.some((f) => (f.friendly_name ?? "") === name)
          ? Option.some([422, "mfa_factor_name_conflict"])
          : factors.length >= caps.maxEnrolledFactors || verified >= caps.maxVerifiedFactors
          ? Option.some([422, "too_many_enrolled_mfa_factors"])
          : verified > 0 && aal !== "aal2"
          ? Option.some([403, "insufficient_aal"])
          : Option.none()
        expect(codeOf(enrolmentRefusal(factors, name, caps, aal))).toEqual(expected)
      }))
  })

  it("an empty name collides with an unnamed factor, as GoTrue compares names exactly", () => {
    const caps = { maxEnrolledFactors: 10, maxVerifiedFactors: 10 }
    expect(codeOf(enrolmentRefusal([{ friendly_name: null, status: "unverified" }], "", caps, "aal1")))
      .toEqual(Option.some([422, "mfa_factor_name_conflict"]))
    expect(enrolmentRefusal([{ friendly_name: "a", status: "unverified" }], "", caps, "aal1")).toEqual(Option.none())
  })
})
