import { ed25519 } from "@noble/curves/ed25519.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { base58 } from "@scure/base"
import * as Either from "effect/Either"

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")

/** EIP-191 personal_sign: the hash a wallet signs for a text message. */
export const personalSignHash = (message: string): Uint8Array => {
  const body = utf8(message)
  return keccak_256(concat(utf8(`\x19Ethereum Signed Message:\n${body.length}`), body))
}

/** The Ethereum address (0x + 40 lowercase hex digits) of an uncompressed secp256k1 public key (65 bytes, 0x04 first). */
export const ethereumAddress = (publicKey: Uint8Array): string => `0x${toHex(keccak_256(publicKey.subarray(1)).subarray(12))}`

/**
 * Whether `signature` (0x + 130 hex digits: r‖s‖v, v 0/1 or 27/28) is the personal_sign of `message` by the key of
 * `address` (compared case-insensitively: an EIP-55 checksum is not checked, as GoTrue does not). Anything that
 * does not decode or recover is false, never a throw.
 */
export const verifyEthereumSignature = (message: string, address: string, signature: string): boolean => {
  if (!/^0[xX](?:[0-9a-fA-F]{2})*$/.test(signature) || signature.length !== 132) return false
  const bytes = Uint8Array.from(signature.slice(2).match(/../g)!, (pair) => parseInt(pair, 16))
  const v = bytes[64]! >= 27 ? bytes[64]! - 27 : bytes[64]!
  // Go's Ecrecover takes recovery ids 0 and 1 only (the x-overflow ids 2 and 3 never occur in practice).
  if (v > 1) return false
  try {
    const recovered = secp256k1.Signature.fromBytes(bytes.subarray(0, 64), "compact").addRecoveryBit(v)
      .recoverPublicKey(personalSignHash(message))
    return ethereumAddress(recovered.toBytes(false)) === address.toLowerCase()
  } catch {
    return false
  }
}

/** Solana's off-chain message envelope (what a Ledger signs), version 0, ASCII format, one signer. */
const offchainEnvelope = (domain: string, publicKey: Uint8Array, message: Uint8Array): Uint8Array => {
  const paddedDomain = new Uint8Array(32)
  paddedDomain.set(utf8(domain).subarray(0, 32))
  const length = new Uint8Array([message.length & 0xff, message.length >> 8])
  return concat(new Uint8Array([0xff]), utf8("solana offchain"), new Uint8Array([0]), paddedDomain, new Uint8Array([0, 1]),
    publicKey, length, message)
}

/** The 32-byte ed25519 public key a base58 Solana address spells, or undefined. */
export const solanaPublicKey = (address: string): Uint8Array | undefined => {
  try {
    const key = base58.decode(address)
    return key.length === 32 ? key : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether `signature` is the ed25519 signature of `message` by `address`'s key, over the message's bytes (Sign In
 * With Solana) or over Solana's off-chain envelope (Ledger), as GoTrue accepts both. Verification is RFC 8032's
 * strict one (Go's crypto/ed25519), not ZIP-215's. An address that is not a 32-byte key is false (GoTrue panics).
 */
export const verifySolanaSignature = (message: string, domain: string, address: string, signature: Uint8Array): boolean => {
  const publicKey = solanaPublicKey(address)
  if (publicKey === undefined || signature.length !== 64) return false
  const body = utf8(message)
  const verify = (signed: Uint8Array) => {
    try {
      return ed25519.verify(signature, signed, publicKey, { zip215: false })
    } catch {
      return false
    }
  }
  return verify(body) || (body.length <= 0xffff && verify(offchainEnvelope(domain, publicKey, body)))
}

/** GoTrue's shape check of an Ethereum signature before anything else: a validation failure's text, or undefined. */
export const ethereumSignatureProblem = (signature: string): string | undefined =>
  signature.replace(/^0x/, "").length === 130
    ? undefined
    : "signature must be 65 bytes long, encoded as a 130 character-long hexadecimal string"

/** GoTrue's decoding of a Solana signature: base64 or base64url, padded or not; else a validation failure's text. */
export const decodeSolanaSignature = (signature: string): Either.Either<Uint8Array, string> => {
  if (signature.length !== 86 && signature.length !== 88) {
    return Either.left("signature must be 64 bytes encoded as base64 with or without padding")
  }
  const url = signature.replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_")
  return /^[A-Za-z0-9_-]*$/.test(url) && url.length % 4 !== 1
    ? Either.right(new Uint8Array(Buffer.from(url, "base64url")))
    : Either.left("signature does not contain valid base64 characters")
}
