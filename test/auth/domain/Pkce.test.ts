import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Option } from "effect"
import {
  challengeOf,
  isFlowStateExpired,
  parsePkce,
  pkceToken,
  verifierMatches,
  withoutPkcePrefix
} from "../../../src/auth/domain/Pkce.js"

const UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".split("")
const unreserved = (min: number, max: number) =>
  FastCheck.array(FastCheck.constantFrom(...UNRESERVED), { minLength: min, maxLength: max }).map((cs) => cs.join(""))

describe("parsePkce", () => {
  it("neither parameter is the implicit flow", () => {
    expect(parsePkce(undefined, null)).toStrictEqual(Either.right(Option.none()))
    expect(parsePkce("", "")).toStrictEqual(Either.right(Option.none()))
  })

  it.prop("one without the other is refused", [unreserved(43, 128), FastCheck.constantFrom("s256", "plain")], ([c, m]) => {
    expect(parsePkce(c, undefined)).toStrictEqual(Either.left("unpaired"))
    expect(parsePkce(undefined, m)).toStrictEqual(Either.left("unpaired"))
  })

  it.prop(
    "any 43–128 unreserved characters with either method in any case is accepted",
    [unreserved(43, 128), FastCheck.constantFrom("s256", "S256", "plain", "PLAIN", "Plain")],
    ([c, m]) => {
      expect(parsePkce(c, m)).toStrictEqual(Either.right(Option.some({ challenge: c, method: m.toLowerCase() })))
    }
  )

  it.prop("a challenge of the wrong length is refused", [FastCheck.oneof(unreserved(1, 42), unreserved(129, 200))], ([c]) => {
    expect(parsePkce(c, "s256")).toStrictEqual(Either.left("length"))
  })

  it("a character outside the unreserved set is refused, and an unknown method", () => {
    expect(parsePkce(`${"a".repeat(42)}+`, "s256")).toStrictEqual(Either.left("characters"))
    expect(parsePkce(`${"a".repeat(42)}=`, "plain")).toStrictEqual(Either.left("characters"))
    expect(parsePkce("a".repeat(43), "S512")).toStrictEqual(Either.left("method"))
  })
})

describe("verifierMatches", () => {
  it.prop("s256 is base64url without padding of the SHA-256", [unreserved(43, 128)], ([verifier]) => {
    const base64 = createHash("sha256").update(verifier).digest("base64")
    expect(challengeOf(verifier, "s256")).toBe(base64.replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_"))
    expect(challengeOf(verifier, "plain")).toBe(verifier)
  })

  it.prop("the verifier a challenge was made from matches it, under either method", [unreserved(43, 128)], ([verifier]) => {
    const s256 = createHash("sha256").update(verifier).digest("base64url")
    expect(verifierMatches(verifier, { challenge: s256, method: "s256" })).toBe(true)
    expect(verifierMatches(verifier, { challenge: verifier, method: "plain" })).toBe(true)
  })

  it.prop("another verifier does not", [unreserved(43, 128), unreserved(43, 128)], ([verifier, other]) => {
    FastCheck.pre(verifier !== other)
    expect(verifierMatches(other, { challenge: challengeOf(verifier, "s256"), method: "s256" })).toBe(false)
    expect(verifierMatches(other, { challenge: verifier, method: "plain" })).toBe(false)
  })
})

describe("stored tokens and expiry", () => {
  it.prop("the prefix comes off again", [FastCheck.hexaString({ minLength: 56, maxLength: 56 })], ([hash]) => {
    expect(withoutPkcePrefix(pkceToken(hash))).toBe(hash)
    expect(withoutPkcePrefix(hash)).toBe(hash)
  })

  it("a flow state lasts 300 seconds from its creation", () => {
    const created = new Date(Date.UTC(2030, 0, 1))
    expect(isFlowStateExpired(created, new Date(created.getTime() + 300_000))).toBe(false)
    expect(isFlowStateExpired(created, new Date(created.getTime() + 300_001))).toBe(true)
  })
})
