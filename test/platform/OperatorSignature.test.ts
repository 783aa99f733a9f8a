import { createHmac } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { verifyOperatorSignature } from "../../src/platform/http/OperatorSignature.js"

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
const sign = (header: Record<string, unknown>, payload: Record<string, unknown>, secret: string) => {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`
}

const secret = fc.string({ minLength: 16, maxLength: 40 })
const now = fc.integer({ min: 1_000_000_000, max: 2_000_000_000 })

describe("verifyOperatorSignature (multi-instance mode)", () => {
  it.prop("accepts an HS256 signature by OPERATOR_TOKEN that has not expired", [secret, now, fc.integer({ min: 1, max: 3600 })], ([key, at, ahead]) => {
    expect(verifyOperatorSignature(sign({ alg: "HS256", typ: "JWT" }, { exp: at + ahead, id: "x" }, key), key, at)).toBe("valid")
    expect(verifyOperatorSignature(sign({ alg: "HS256" }, {}, key), key, at)).toBe("valid")
  })

  it.prop("refuses another key, an expiry passed, a later nbf, another algorithm, or a tampered payload", [
    secret,
    secret,
    now,
    fc.integer({ min: 0, max: 3600 })
  ], ([key, other, at, behind]) => {
    fc.pre(key !== other)
    expect(verifyOperatorSignature(sign({ alg: "HS256" }, { exp: at + 60 }, other), key, at)).toBe("invalid")
    expect(verifyOperatorSignature(sign({ alg: "HS256" }, { exp: at - behind }, key), key, at)).toBe("invalid")
    expect(verifyOperatorSignature(sign({ alg: "HS256" }, { nbf: at + behind + 1 }, key), key, at)).toBe("invalid")
    expect(verifyOperatorSignature(sign({ alg: "HS512" }, {}, key), key, at)).toBe("invalid")
    const [header, , mac] = sign({ alg: "HS256" }, { exp: at + 60 }, key).split(".")
    expect(verifyOperatorSignature(`${header}.${segment({ exp: at + 9999 })}.${mac}`, key, at)).toBe("invalid")
    expect(verifyOperatorSignature(`${segment({ alg: "none" })}.${segment({})}.`, key, at)).toBe("invalid")
  })

  it("tells a missing header from a bad one", () => {
    expect(verifyOperatorSignature(undefined, "k".repeat(20), 0)).toBe("missing")
    expect(verifyOperatorSignature("  ", "k".repeat(20), 0)).toBe("missing")
    expect(verifyOperatorSignature("not a jwt", "k".repeat(20), 0)).toBe("invalid")
  })
})
