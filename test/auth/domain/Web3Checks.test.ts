import { describe, expect, it } from "@effect/vitest"
import { Duration, Either, FastCheck } from "effect"
import { compileAllowList } from "../../../src/domain/RedirectAllowList.js"
import { checkWeb3Message, web3MessageValidUntil } from "../../../src/auth/domain/Web3Checks.js"
import { parseWeb3Message, type Web3Chain } from "../../../src/auth/domain/Web3Message.js"
import { type MessageFields, signInMessage } from "../../support/Web3Wallets.js"

const AT = Date.parse("2026-11-26T12:00:00.000Z")
const TEN_MINUTES = 600_000
const policy = {
  siteUrl: "https://app.example.com",
  allowList: compileAllowList(["https://*.preview.example.com/**"]),
  maximumValidity: Duration.minutes(10)
}

const message = (chain: Web3Chain, overrides: Partial<MessageFields> = {}) => {
  const fields: MessageFields = {
    domain: "app.example.com",
    address: chain === "ethereum" ? "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed" : "GsbwXfJraMomNxBcjYLcG3mxkBUiyWXAB32fGbSMQRdW",
    uri: "https://app.example.com/login",
    issuedAt: new Date(AT),
    ...overrides
  }
  return Either.getOrThrow(parseWeb3Message(chain, signInMessage(chain === "ethereum" ? "Ethereum" : "Solana", fields)))
}

describe("checkWeb3Message", () => {
  it("passes a message for SITE_URL or an allowed URI, issued now", () => {
    expect(checkWeb3Message(message("ethereum"), AT, policy)).toBeUndefined()
    expect(checkWeb3Message(message("solana", { domain: "pr-1.preview.example.com", uri: "https://pr-1.preview.example.com/x" }), AT, policy)).toBeUndefined()
  })

  it.each<[Partial<MessageFields>, string]>([
    [{ uri: "http://app.example.com/login" }, "Signed Ethereum message is using URI which does not use HTTPS"],
    [{ uri: "https://evil.example.com/login", domain: "evil.example.com" }, "Signed Ethereum message is using URI which is not allowed on this server, message was signed for another app"],
    [{ domain: "evil.example.com" }, "Signed Ethereum message is using a Domain that does not match the one in URI which is not allowed on this server"],
    [{ domain: "app.example.com:443" }, "Signed Ethereum message is using a Domain that does not match the one in URI which is not allowed on this server"],
    [{ notBefore: new Date(AT + 1), expirationTime: new Date(AT + 60_000) }, "Signed Ethereum message becomes valid in the future"],
    // GoTrue checks an Ethereum Expiration Time only beside a Not Before; Gatehouse checks it alone.
    [{ issuedAt: new Date(AT - 60_000), expirationTime: new Date(AT - 1) }, "Signed Ethereum message is expired"],
    [{ issuedAt: new Date(AT - TEN_MINUTES - 1) }, "Ethereum message was issued too long ago"],
    [{ issuedAt: new Date(AT + TEN_MINUTES + 1) }, "Ethereum message was issued too far in the future"]
  ])("refuses %j: %s", (overrides, expected) => {
    expect(checkWeb3Message(message("ethereum", overrides), AT, policy)).toBe(expected)
  })

  it("spells Solana's refusals with its name, and exempts localhost URIs from HTTPS and the domain comparison", () => {
    expect(checkWeb3Message(message("solana", { uri: "http://app.example.com/" }), AT, policy)).toBe("Signed Solana message is using URI which does not use HTTPS")
    const local = { ...policy, siteUrl: "http://localhost:3000" }
    expect(checkWeb3Message(message("solana", { uri: "http://localhost:5173/cb", domain: "app.example.com" }), AT, local)).toBeUndefined()
  })

  it.prop("the time window is inclusive at both ends, as Go's Before/After make it", [FastCheck.integer({ min: -2 * TEN_MINUTES, max: 2 * TEN_MINUTES })], ([offset]) => {
    const refused = checkWeb3Message(message("ethereum", { issuedAt: new Date(AT + offset) }), AT, policy)
    expect(refused === undefined).toBe(Math.abs(offset) <= TEN_MINUTES)
  })

  it.prop("Not Before and Expiration Time bound the window inclusively", [FastCheck.integer({ min: -5000, max: 5000 }), FastCheck.integer({ min: 0, max: 5000 })], ([start, length]) => {
    const m = message("ethereum", { issuedAt: new Date(AT + start - 1), notBefore: new Date(AT + start), expirationTime: new Date(AT + start + length) })
    for (const now of [AT + start - 1, AT + start, AT + start + length, AT + start + length + 1]) {
      const inside = now >= AT + start && now <= AT + start + length
      expect(checkWeb3Message(m, now, policy) === undefined).toBe(inside)
    }
  })

  it("keeps a used message's record until the end of its window, or its Expiration Time if sooner", () => {
    expect(web3MessageValidUntil(message("ethereum"), Duration.minutes(10))).toBe(AT + TEN_MINUTES)
    expect(web3MessageValidUntil(message("ethereum", { expirationTime: new Date(AT + 1000) }), Duration.minutes(10))).toBe(AT + 1000)
  })
})
