import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { base58 } from "@scure/base"
import {
  decodeSolanaSignature,
  ethereumSignatureProblem,
  verifyEthereumSignature,
  verifySolanaSignature
} from "../../../src/auth/domain/Web3Signatures.js"
import { ethereumWallet, signInMessage, solanaWallet } from "../../support/Web3Wallets.js"

const AT = new Date("2026-11-26T12:00:00.000Z")
const text = FastCheck.string({ minLength: 1, maxLength: 300, unit: "grapheme" })
const key = FastCheck.uint8Array({ minLength: 32, maxLength: 32 }).filter((bytes) => bytes.some((b) => b !== 0))

const flipBit = (bytes: Uint8Array, at: number, bit: number): Uint8Array => {
  const out = Uint8Array.from(bytes)
  out[at % out.length]! ^= 1 << (bit % 8)
  return out
}

describe("verifyEthereumSignature", () => {
  it.prop("accepts a personal_sign by the address's key, any case of the address, v as 27/28 or 0/1", [key, text], ([secret, message]) => {
    const wallet = ethereumWallet(secret)
    const signature = wallet.sign(message)
    expect(verifyEthereumSignature(message, wallet.address, signature)).toBe(true)
    expect(verifyEthereumSignature(message, wallet.address.toUpperCase().replace("0X", "0x"), signature)).toBe(true)
    const v = parseInt(signature.slice(130), 16) - 27
    expect(verifyEthereumSignature(message, wallet.address, `${signature.slice(0, 130)}0${v}`)).toBe(true)
  }, { fastCheck: { numRuns: 30 } })

  it.prop("refuses the signature for any other message, or any changed signature byte", [key, text, FastCheck.nat(), FastCheck.nat()], ([secret, message, at, bit]) => {
    const wallet = ethereumWallet(secret)
    const signature = wallet.sign(message)
    expect(verifyEthereumSignature(`${message}.`, wallet.address, signature)).toBe(false)
    const bytes = Uint8Array.from(signature.slice(2).match(/../g)!, (pair) => parseInt(pair, 16))
    const changed = flipBit(bytes, at % 64, bit)
    expect(verifyEthereumSignature(message, wallet.address, `0x${Buffer.from(changed).toString("hex")}`)).toBe(false)
  }, { fastCheck: { numRuns: 30 } })

  it("refuses another wallet's signature, a missing 0x, bad hex and bad recovery ids, without throwing", () => {
    const wallet = ethereumWallet()
    const signature = wallet.sign("hello")
    expect(verifyEthereumSignature("hello", ethereumWallet().address, signature)).toBe(false)
    expect(verifyEthereumSignature("hello", wallet.address, `00${signature.slice(2)}`)).toBe(false)
    expect(verifyEthereumSignature("hello", wallet.address, `0x${"zz".repeat(65)}`)).toBe(false)
    expect(verifyEthereumSignature("hello", wallet.address, `${signature.slice(0, 130)}1d`)).toBe(false)
    expect(verifyEthereumSignature("hello", wallet.address, `0x${"00".repeat(65)}`)).toBe(false)
  })
})

describe("verifySolanaSignature", () => {
  it.prop("accepts the wallet's signature over the message, refuses any changed byte of message or signature", [key, text, FastCheck.nat(), FastCheck.nat()], ([secret, message, at, bit]) => {
    const wallet = solanaWallet(secret)
    const signature = wallet.signBytes(new TextEncoder().encode(message))
    expect(verifySolanaSignature(message, "app.example.com", wallet.address, signature)).toBe(true)
    expect(verifySolanaSignature(message, "app.example.com", wallet.address, flipBit(signature, at, bit))).toBe(false)
    expect(verifySolanaSignature(`${message} `, "app.example.com", wallet.address, signature)).toBe(false)
  }, { fastCheck: { numRuns: 30 } })

  it("accepts a Ledger's signature over Solana's off-chain envelope", () => {
    const wallet = solanaWallet()
    const message = signInMessage("Solana", { domain: "app.example.com", address: wallet.address, uri: "https://app.example.com/", issuedAt: AT })
    const body = new TextEncoder().encode(message)
    const domain = new Uint8Array(32)
    domain.set(new TextEncoder().encode("app.example.com"))
    const envelope = Uint8Array.from([0xff, ...new TextEncoder().encode("solana offchain"), 0, ...domain, 0, 1, ...wallet.publicKey,
      body.length & 0xff, body.length >> 8, ...body])
    expect(verifySolanaSignature(message, "app.example.com", wallet.address, wallet.signBytes(envelope))).toBe(true)
    expect(verifySolanaSignature(message, "other.example.com", wallet.address, wallet.signBytes(envelope))).toBe(false)
  })

  it("answers false, never a throw, for an address that is not a 32-byte key or not base58, and a signature not 64 bytes", () => {
    const wallet = solanaWallet()
    const signature = wallet.signBytes(new TextEncoder().encode("hi"))
    expect(verifySolanaSignature("hi", "d.example", base58.encode(new Uint8Array(31).fill(7)), signature)).toBe(false)
    expect(verifySolanaSignature("hi", "d.example", "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", signature)).toBe(false)
    expect(verifySolanaSignature("hi", "d.example", wallet.address, signature.subarray(0, 63))).toBe(false)
    expect(verifySolanaSignature("hi", "d.example", solanaWallet().address, signature)).toBe(false)
  })
})

describe("signature shapes, before any parsing", () => {
  it.prop("a Solana signature reads the same in base64 and base64url, padded or not", [FastCheck.uint8Array({ minLength: 64, maxLength: 64 })], ([bytes]) => {
    const b64 = Buffer.from(bytes).toString("base64")
    for (const spelling of [b64, b64.replace(/=+$/, ""), Buffer.from(bytes).toString("base64url"), `${Buffer.from(bytes).toString("base64url")}==`]) {
      expect(decodeSolanaSignature(spelling)).toEqual(Either.right(Uint8Array.from(bytes)))
    }
  })

  it("a Solana signature of another length or alphabet, and an Ethereum one not of 130 hex digits, get GoTrue's texts", () => {
    expect(decodeSolanaSignature("a".repeat(87))).toEqual(Either.left("signature must be 64 bytes encoded as base64 with or without padding"))
    expect(decodeSolanaSignature(`${"a".repeat(85)}!`)).toEqual(Either.left("signature does not contain valid base64 characters"))
    expect(ethereumSignatureProblem(`0x${"a".repeat(130)}`)).toBeUndefined()
    expect(ethereumSignatureProblem("a".repeat(130))).toBeUndefined()
    expect(ethereumSignatureProblem(`0x${"a".repeat(128)}`)).toBe("signature must be 65 bytes long, encoded as a 130 character-long hexadecimal string")
  })
})
