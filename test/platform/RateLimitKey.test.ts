import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { clientAddress, MAX_RATE_LIMIT_KEY_LENGTH, rateLimitKey } from "../../src/platform/http/RateLimitKey.js"

const address = FastCheck.oneof(FastCheck.ipV4(), FastCheck.ipV6())
const blank = FastCheck.stringMatching(/^[ \t]*$/)

describe("rateLimitKey", () => {
  it("is the first comma-separated value, trimmed, as GoTrue takes it", () => {
    expect(rateLimitKey("203.0.113.7")).toBe("203.0.113.7")
    expect(rateLimitKey(" 203.0.113.7 , 10.0.0.1, 10.0.0.2")).toBe("203.0.113.7")
    expect(rateLimitKey("2001:db8::1,10.0.0.1")).toBe("2001:db8::1")
  })

  it("is none for a missing header or a blank first value (GoTrue then does not limit the request)", () => {
    expect(rateLimitKey(undefined)).toBeUndefined()
    expect(rateLimitKey("")).toBeUndefined()
    expect(rateLimitKey("   ")).toBeUndefined()
    expect(rateLimitKey(" , 203.0.113.7")).toBeUndefined()
  })

  it.prop("a proxy's appended hops never change the key", [address, FastCheck.array(address, { maxLength: 5 }), blank, blank], ([client, hops, before, after]) => {
    expect(rateLimitKey([`${before}${client}${after}`, ...hops].join(","))).toBe(client)
  })

  it.prop("any value at all gives a key that fits the table, or none", [FastCheck.string({ maxLength: 2_000 })], ([value]) => {
    const key = rateLimitKey(value)
    if (key !== undefined) {
      expect(key.length).toBeGreaterThan(0)
      expect(key.length).toBeLessThanOrEqual(MAX_RATE_LIMIT_KEY_LENGTH)
      expect(key).not.toContain(",")
    }
  })

  it("cuts a long value to its first 255 characters", () => {
    expect(rateLimitKey("x".repeat(10_000))).toBe("x".repeat(MAX_RATE_LIMIT_KEY_LENGTH))
  })
})

describe("clientAddress", () => {
  it.prop("the header's client when it names one, else the peer; a request always has a key when it has a peer",
    [FastCheck.option(FastCheck.string({ maxLength: 300 }), { nil: undefined }), address], ([forwarded, peer]) => {
      expect(clientAddress(forwarded, peer)).toBe(rateLimitKey(forwarded) ?? peer)
    })
  it("takes the first address of the configured header, else the peer", () => {
    expect(clientAddress("203.0.113.7, 10.0.0.2", "10.0.0.1")).toBe("203.0.113.7")
    expect(clientAddress(" 2001:db8::1 ", "10.0.0.1")).toBe("2001:db8::1")
    expect(clientAddress(undefined, "127.0.0.1")).toBe("127.0.0.1")
    expect(clientAddress(" , 203.0.113.7", "10.0.0.1")).toBe("10.0.0.1")
  })
  it("no header and no peer is no key", () => {
    expect(clientAddress(undefined, undefined)).toBeUndefined()
    expect(clientAddress(" ", " ")).toBeUndefined()
  })
})
