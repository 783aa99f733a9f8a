import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { GO_ZERO_TIME, parseRfc3339, parseWeb3Message, type Web3Chain, web3MessageSizeProblem } from "../../../src/auth/domain/Web3Message.js"
import { signInMessage } from "../../support/Web3Wallets.js"

const ETH = "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"
const SOL = "GsbwXfJraMomNxBcjYLcG3mxkBUiyWXAB32fGbSMQRdW"
const AT = new Date("2026-11-26T12:00:00.000Z")

const ethereum = (overrides: Partial<Parameters<typeof signInMessage>[1]> = {}) =>
  signInMessage("Ethereum", { domain: "app.example.com", address: ETH, uri: "https://app.example.com/login", chainId: "1", issuedAt: AT, ...overrides })
const solana = (overrides: Partial<Parameters<typeof signInMessage>[1]> = {}) =>
  signInMessage("Solana", { domain: "app.example.com", address: SOL, uri: "https://app.example.com/login", issuedAt: AT, ...overrides })

const error = (chain: Web3Chain, raw: string) => Either.match(parseWeb3Message(chain, raw), { onLeft: (e) => e, onRight: () => "parsed" })
const parsed = (chain: Web3Chain, raw: string) => Either.getOrThrow(parseWeb3Message(chain, raw))

describe("parseWeb3Message", () => {
  it("reads auth-js's Ethereum message, statement, nonce, times and resources", () => {
    const m = parsed("ethereum", ethereum({
      statement: "Sign in to the app", nonce: "abc123", expirationTime: new Date(AT.getTime() + 60_000),
      notBefore: new Date(AT.getTime() - 60_000), requestId: "r-1", resources: ["https://app.example.com/a", "ipfs://x"]
    }))
    expect(m).toMatchObject({
      chain: "ethereum", domain: "app.example.com", address: ETH, statement: "Sign in to the app", uri: "https://app.example.com/login",
      version: "1", chainId: "1", nonce: "abc123", issuedAt: AT.getTime(), expirationTime: AT.getTime() + 60_000,
      notBefore: AT.getTime() - 60_000, requestId: "r-1", resources: ["https://app.example.com/a", "ipfs://x"]
    })
  })

  it("keeps GoTrue's absent statement: null for Ethereum, \"\" for Solana; absent Chain ID is \"\"", () => {
    expect(parsed("ethereum", ethereum({ chainId: undefined })).statement).toBeNull()
    expect(parsed("ethereum", ethereum({ chainId: undefined })).chainId).toBe("")
    expect(parsed("solana", solana()).statement).toBe("")
    expect(parsed("solana", solana({ chainId: "solana:devnet" })).chainId).toBe("solana:devnet")
  })

  it.each<[Web3Chain, string, string]>([
    ["ethereum", "a\nb\nc", "siwe: message needs at least 6 lines"],
    ["ethereum", ethereum().replace("Ethereum account:", "Ethereum account"), "siwe: message first line does not end in \" wants you to sign in with your Ethereum account:\""],
    ["solana", solana().replace("Solana", "Solano"), "siws: message first line does not end in \" wants you to sign in with your Solana account:\""],
    ["ethereum", ethereum().replace("\n", "\r\n"), "siwe: message first line does not end in \" wants you to sign in with your Ethereum account:\""],
    ["ethereum", ethereum({ domain: "https://app.example.com" }), "siwe: domain in first line of message is not valid"],
    ["ethereum", ethereum({ domain: "127.0.0.1" }), "siwe: domain in first line of message is not valid"],
    ["ethereum", ethereum({ address: "0x1234" }), "siwe: wallet address is not a valid Ethereum address"],
    ["solana", solana({ address: "not_base58!" }), "siws: wallet address is not in base58 format"],
    ["ethereum", ethereum().replace(`${ETH}\n\n`, `${ETH}\nx\n`), "siwe: third line must be empty"],
    ["ethereum", ethereum({ uri: "not a uri" }), "siwe: URI is not valid"],
    ["ethereum", ethereum({ chainId: "0" }), "siwe: Chain ID is not valid"],
    ["ethereum", ethereum({ chainId: "mainnet" }), "siwe: Chain ID is not valid"],
    ["solana", solana({ chainId: "solana:moonnet" }), "siws: Chain ID is not valid"],
    ["ethereum", ethereum().replace(AT.toISOString(), "2026-11-26 12:00:00Z"), "siwe: Issued At is not a valid ISO8601 timestamp"],
    ["ethereum", ethereum().replace(AT.toISOString(), "0001-01-01T00:00:00Z"), "siwe: Issued At is not specified"],
    ["solana", solana().replace(AT.toISOString(), "0001-01-01T00:00:00Z"), "siws: Issued At is not specified"],
    ["ethereum", ethereum().replace("Issued At", "Issued"), "siwe: Issued At is not specified"],
    ["ethereum", `${ethereum()}\nExpiration Time: tomorrow`, "siwe: Expiration Time is not a valid ISO8601 timestamp"],
    ["ethereum", `${ethereum()}\nNot Before: soon`, "siwe: Not Before is not a valid ISO8601 timestamp"],
    ["ethereum", ethereum().replace("Version: 1", "Version: 2"), "siwe: Version value is not supported, expected 1 got \"2\""],
    ["ethereum", ethereum().replace("Version: 1\n", ""), "siwe: Version value is not supported, expected 1 got \"\""],
    ["ethereum", ethereum().replace("URI:", "Link:"), "siwe: URI is not specified"],
    ["ethereum", ethereum({ expirationTime: new Date(AT.getTime() - 1000) }), "siwe: Issued At is after Expiration Time"],
    ["ethereum", ethereum({ expirationTime: new Date(AT.getTime() + 1000), notBefore: new Date(AT.getTime() + 2000) }), "siwe: Not Before is after Expiration Time"],
    ["ethereum", `${ethereum()}\nno colon here`, "siwe: encountered unparsable line at index 7"],
    ["ethereum", ethereum({ resources: ["https://ok.example/", "no uri"] }), "siwe: Resource at position 1 has invalid URI"],
    // auth-js's Solana builder writes "Resources" without its colon: GoTrue refuses it, and so does Gatehouse.
    ["solana", `${solana()}\nResources\n- https://a.example/`, "siws: encountered unparsable line at index 6"]
  ])("%s: refuses with GoTrue's text %#", (chain, raw, expected) => {
    expect(error(chain, raw)).toBe(expected)
  })

  it("takes a statement only when followed by an empty line; ignores unknown keys; the last repeated key wins", () => {
    const raw = `${ethereum()}\nFoo: bar\nNonce: one\nNonce: two`
    expect(parsed("ethereum", raw)).toMatchObject({ statement: null, nonce: "two" })
    // Without its empty line the "statement" is a field line, and GoTrue's grammar then finds no colon in it.
    expect(error("ethereum", ethereum().replace(`${ETH}\n\n`, `${ETH}\n\nHello there\n`))).toBe("siwe: encountered unparsable line at index 3")
  })

  it("reads RFC 3339 as Go does: offsets, fractions, no lower-case t/z, no calendar nonsense", () => {
    expect(parseRfc3339("2026-11-26T13:00:00+01:00")).toBe(AT.getTime())
    expect(parseRfc3339("2026-11-26T12:00:00.123456789Z")).toBe(AT.getTime() + 123)
    expect(parseRfc3339("0001-01-01T00:00:00Z")).toBe(GO_ZERO_TIME)
    for (const bad of ["2026-11-26t12:00:00Z", "2026-11-26T12:00:00z", "2026-02-30T00:00:00Z", "2026-11-26T24:00:00Z", "2026-11-26T12:00Z"]) {
      expect(parseRfc3339(bad)).toBeUndefined()
    }
  })

  const fields = FastCheck.record({
    domain: FastCheck.constantFrom("app.example.com", "localhost:3000", "a-b.example.co.uk:8443"),
    statement: FastCheck.option(FastCheck.stringMatching(/^[A-Za-z][A-Za-z .,!]{0,40}$/), { nil: undefined }),
    nonce: FastCheck.option(FastCheck.stringMatching(/^[A-Za-z0-9]{8,20}$/), { nil: undefined }),
    issuedAt: FastCheck.integer({ min: 0, max: 4_000_000_000_000 }),
    expiresAfter: FastCheck.option(FastCheck.integer({ min: 0, max: 10_000_000 }), { nil: undefined }),
    requestId: FastCheck.option(FastCheck.stringMatching(/^[A-Za-z0-9-]{1,20}$/), { nil: undefined }),
    resources: FastCheck.option(FastCheck.array(FastCheck.webUrl(), { maxLength: 3 }), { nil: undefined })
  })

  it.prop("reads back every field of any message auth-js would build", [fields, FastCheck.constantFrom<Web3Chain>("ethereum", "solana")], ([f, chain]) => {
    const expirationTime = f.expiresAfter === undefined ? undefined : new Date(f.issuedAt + f.expiresAfter)
    const address = chain === "ethereum" ? ETH : SOL
    const raw = signInMessage(chain === "ethereum" ? "Ethereum" : "Solana", {
      ...f, address, uri: `https://${f.domain}/cb`, issuedAt: new Date(f.issuedAt), expirationTime,
      chainId: chain === "ethereum" ? "137" : "solana:mainnet"
    })
    expect(parsed(chain, raw)).toStrictEqual({
      chain, raw, domain: f.domain, address, statement: f.statement ?? (chain === "ethereum" ? null : ""),
      uri: `https://${f.domain}/cb`, version: "1", chainId: chain === "ethereum" ? "137" : "solana:mainnet", nonce: f.nonce ?? "",
      issuedAt: f.issuedAt, expirationTime: expirationTime?.getTime(), notBefore: undefined, requestId: f.requestId,
      resources: f.resources ?? []
    })
  })
})

describe("web3MessageSizeProblem", () => {
  it("counts bytes as GoTrue does: 64 to 20 KiB", () => {
    expect(web3MessageSizeProblem("a".repeat(63))).toBe("message is too short")
    expect(web3MessageSizeProblem("a".repeat(64))).toBeUndefined()
    // 32 two-byte characters are 64 bytes.
    expect(web3MessageSizeProblem("é".repeat(32))).toBeUndefined()
    expect(web3MessageSizeProblem("a".repeat(20 * 1024))).toBeUndefined()
    expect(web3MessageSizeProblem("a".repeat(20 * 1024 + 1))).toBe("message must not exceed 20KB")
  })
})
