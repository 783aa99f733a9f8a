import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { isUnavailable, isUniqueViolation } from "../../src/platform/sql/SqlErrors.js"

const withCode = (code: string) => new SqlError({ cause: Object.assign(new Error("driver said no"), { code }) })
const withMessage = (message: string) => new SqlError({ cause: new Error(message) })

describe("SqlErrors.isUnavailable", () => {
  it("reads an outage from SQLSTATE classes 08, 53, 57P and the driver's socket errors", () => {
    for (const code of ["08006", "08001", "53300", "57P01", "57P03", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND"]) {
      expect(isUnavailable(withCode(code))).toBe(true)
    }
  })

  it("reads pg's uncoded messages for a connection lost under a query or not opened in time", () => {
    expect(isUnavailable(withMessage("Connection terminated unexpectedly"))).toBe(true)
    expect(isUnavailable(withMessage("timeout exceeded when trying to connect"))).toBe(true)
  })

  it("is no outage for a bug, a constraint, or anything that is not a SqlError", () => {
    for (const code of ["23505", "42P01", "22P02", "40001"]) expect(isUnavailable(withCode(code))).toBe(false)
    expect(isUnavailable(withMessage("syntax error at or near"))).toBe(false)
    expect(isUnavailable(Object.assign(new Error("x"), { cause: { code: "ECONNREFUSED" } }))).toBe(false)
    expect(isUnavailable(undefined)).toBe(false)
    expect(isUniqueViolation(withCode("23505"))).toBe(true)
  })
})
