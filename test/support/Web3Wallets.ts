import { ed25519 } from "@noble/curves/ed25519.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { base58, base64urlnopad } from "@scure/base"
import { ethereumAddress, personalSignHash } from "../../src/auth/domain/Web3Signatures.js"

/** The fields of a test's sign-in message; the builders write them as auth-js does. */
export interface MessageFields {
  readonly domain: string
  readonly address: string
  readonly statement?: string | undefined
  readonly uri: string
  readonly chainId?: string | undefined
  readonly nonce?: string | undefined
  readonly issuedAt: Date
  readonly expirationTime?: Date | undefined
  readonly notBefore?: Date | undefined
  readonly requestId?: string | undefined
  readonly resources?: ReadonlyArray<string> | undefined
}

/** A message as auth-js's createSiweMessage / Solana signMessage path lays it out (Resources with its colon). */
export const signInMessage = (account: "Ethereum" | "Solana", f: MessageFields): string => [
  `${f.domain} wants you to sign in with your ${account} account:`,
  f.address,
  "",
  ...(f.statement === undefined ? [] : [f.statement, ""]),
  `URI: ${f.uri}`,
  "Version: 1",
  ...(f.chainId === undefined ? [] : [`Chain ID: ${f.chainId}`]),
  ...(f.nonce === undefined ? [] : [`Nonce: ${f.nonce}`]),
  `Issued At: ${f.issuedAt.toISOString()}`,
  ...(f.expirationTime === undefined ? [] : [`Expiration Time: ${f.expirationTime.toISOString()}`]),
  ...(f.notBefore === undefined ? [] : [`Not Before: ${f.notBefore.toISOString()}`]),
  ...(f.requestId === undefined ? [] : [`Request ID: ${f.requestId}`]),
  ...(f.resources === undefined ? [] : ["Resources:", ...f.resources.map((r) => `- ${r}`)])
].join("\n")

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")

/** An Ethereum wallet over a fresh secp256k1 key: its lowercase address and personal_sign. */
export const ethereumWallet = (secretKey: Uint8Array = secp256k1.utils.randomSecretKey()) => {
  const address = ethereumAddress(secp256k1.getPublicKey(secretKey, false))
  return {
    address,
    /** personal_sign: 0x r‖s‖v with v 27/28, as wallets answer. */
    sign: (message: string): string => {
      const recovered = secp256k1.sign(personalSignHash(message), secretKey, { prehash: false, format: "recovered" })
      // noble's "recovered" format puts the recovery byte first; Ethereum puts it last, plus 27.
      return `0x${hex(recovered.subarray(1))}${(recovered[0]! + 27).toString(16).padStart(2, "0")}`
    }
  }
}

/** A Solana wallet over a fresh ed25519 key: its base58 address, and signMessage's 64 bytes. */
export const solanaWallet = (secretKey: Uint8Array = ed25519.utils.randomSecretKey()) => {
  const publicKey = ed25519.getPublicKey(secretKey)
  return {
    address: base58.encode(publicKey),
    publicKey,
    signBytes: (bytes: Uint8Array): Uint8Array => ed25519.sign(bytes, secretKey),
    /** What auth-js posts: the signature in unpadded base64url. */
    sign: (message: string): string => base64urlnopad.encode(ed25519.sign(new TextEncoder().encode(message), secretKey))
  }
}
