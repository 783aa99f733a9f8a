import { createHash, createHmac } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  encodeSignedRefreshToken,
  hasSignedTokenShape,
  isSignedWith,
  parseSignedRefreshToken,
  signingKeyOf
} from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import { deriveFirstFormRefreshToken, isWellFormedRefreshToken, refreshTokenKey } from "../../../src/auth/sessions/RefreshTokenCodec.js"

const key = FastCheck.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes))
const sessionId = FastCheck.uuid()
const counter = FastCheck.oneof(
  FastCheck.bigInt({ min: 0n, max: 300n }),
  FastCheck.bigInt({ min: 0n, max: 2n ** 63n - 1n })
)

/** A token's bytes with a valid checksum over whatever body is given: a forger's best attempt without the key. */
const withChecksum = (body: Buffer): string =>
  Buffer.concat([body, createHash("sha256").update(body).digest().subarray(0, 4)]).toString("base64url")

const body = (token: string): Buffer => {
  const bytes = Buffer.from(token, "base64url")
  return bytes.subarray(0, bytes.length - 4)
}

describe("GoTrue's signed refresh tokens", () => {
  it.prop("encode then parse gives back the session and counter, signed with that key and no other",
    [key, key, sessionId, counter], ([k, other, sid, n]) => {
      const token = encodeSignedRefreshToken(k, sid, n)
      const parsed = parseSignedRefreshToken(token)
      expect(parsed).toBeDefined()
      expect([parsed!.sessionId, parsed!.counter]).toEqual([sid.toLowerCase(), n])
      expect(isSignedWith(parsed!, k)).toBe(true)
      FastCheck.pre(!other.equals(k))
      expect(isSignedWith(parsed!, other)).toBe(false)
    })

  it.prop("every token is 51 to 62 base64url characters, of the signed shape and well-formed", [key, sessionId, counter], ([k, sid, n]) => {
    const token = encodeSignedRefreshToken(k, sid, n)
    expect(token).toMatch(/^[A-Za-z0-9_-]{51,62}$/)
    expect(hasSignedTokenShape(token)).toBe(true)
    expect(isWellFormedRefreshToken(token)).toBe(true)
  })

  it.prop("any change to one byte is refused: by the checksum, or by the signature when the checksum is made to fit",
    [key, sessionId, counter, FastCheck.nat(), FastCheck.integer({ min: 1, max: 255 })], ([k, sid, n, at, delta]) => {
      const bytes = Buffer.from(encodeSignedRefreshToken(k, sid, n), "base64url")
      const i = at % bytes.length
      const changed = Buffer.from(bytes)
      changed[i] = (changed[i]! + delta) % 256
      expect(parseSignedRefreshToken(changed.toString("base64url"))).toBeUndefined()
      if (i < bytes.length - 4) {
        const forged = parseSignedRefreshToken(withChecksum(changed.subarray(0, bytes.length - 4)))
        expect(forged === undefined || !isSignedWith(forged, k)).toBe(true)
      }
    })

  it.prop("Gatehouse's tokens of the first form (43 characters) and GoTrue's 12-character ones never read as signed tokens",
    [FastCheck.string({ minLength: 1 }), sessionId, FastCheck.bigInt({ min: 1n, max: 2n ** 63n - 1n }), FastCheck.stringMatching(/^[a-z0-9]{12}$/)],
    ([secret, sid, row, legacy]) => {
      const own = deriveFirstFormRefreshToken(refreshTokenKey(secret), sid, String(row))
      for (const token of [own, legacy]) {
        expect(hasSignedTokenShape(token)).toBe(false)
        expect(parseSignedRefreshToken(token)).toBeUndefined()
      }
    })

  it.prop("a string of base64url characters is of the signed shape exactly at the lengths 38 to 47 bytes encode to",
    [FastCheck.stringMatching(/^[A-Za-z0-9_-]{0,80}$/)], ([s]) => {
      const lengths = [51, 52, 54, 55, 56, 58, 59, 60, 62, 63]
      expect(hasSignedTokenShape(s)).toBe(lengths.includes(s.length))
    })

  it("reads the counter as Go's varint: one byte up to 127, two from 128, the largest signed 64-bit value in nine", () => {
    const k = Buffer.alloc(32, 7)
    const sid = "0b5c4e4a-8f0e-4d7e-9b1a-3c2d1e0f9a8b"
    for (const [n, bytes] of [[0n, 38], [127n, 38], [128n, 39], [16_383n, 39], [16_384n, 40], [2n ** 63n - 1n, 46]] as const) {
      const token = encodeSignedRefreshToken(k, sid, n)
      expect(Buffer.from(token, "base64url").length).toBe(bytes)
      expect(parseSignedRefreshToken(token)?.counter).toBe(n)
    }
  })

  it("clamps a ten-byte counter beyond 2^63 - 1 to it, and refuses one beyond 2^64 - 1, as GoTrue does", () => {
    const k = Buffer.alloc(32, 9)
    const head = Buffer.concat([Buffer.of(0), Buffer.alloc(16, 0xab)])
    const signedWith = (varint: Buffer) => {
      const signed = Buffer.concat([head, varint])
      return withChecksum(Buffer.concat([signed, createHmac("sha256", k).update(signed).digest().subarray(0, 16)]))
    }
    const max64 = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
    const clamped = parseSignedRefreshToken(signedWith(max64))
    expect(clamped?.counter).toBe(2n ** 63n - 1n)
    expect(isSignedWith(clamped!, k)).toBe(true)
    expect(parseSignedRefreshToken(signedWith(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])))).toBeUndefined()
  })

  it("refuses another version, a signature of the wrong length, and a non-canonical spelling of the last character", () => {
    const k = Buffer.alloc(32, 1)
    const token = encodeSignedRefreshToken(k, "0b5c4e4a-8f0e-4d7e-9b1a-3c2d1e0f9a8b", 5n)
    const b = body(token)
    expect(parseSignedRefreshToken(withChecksum(Buffer.concat([Buffer.of(1), b.subarray(1)])))).toBeUndefined()
    expect(parseSignedRefreshToken(withChecksum(Buffer.concat([b, Buffer.of(0)])))).toBeUndefined()
    expect(parseSignedRefreshToken(withChecksum(b.subarray(0, b.length - 1)))).toBeUndefined()
    // 38 bytes leave the last character's 2 low bits unused (always 0 as written); setting one spells the same bytes.
    const last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".indexOf(token.at(-1)!)
    const respelled = `${token.slice(0, -1)}${"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last | 1]}`
    expect(Buffer.from(respelled, "base64url").equals(Buffer.from(token, "base64url"))).toBe(true)
    expect(respelled).not.toBe(token)
    expect(parseSignedRefreshToken(respelled)).toBeUndefined()
    expect(parseSignedRefreshToken(`${token}=`)).toBeUndefined()
    expect(parseSignedRefreshToken(token.replace(/.$/, "+"))).toBeUndefined()
  })

  it("reads the session key GoTrue stores (base64url, no padding); an encrypted one cannot be used", () => {
    const raw = Buffer.alloc(32, 3)
    expect(signingKeyOf(raw.toString("base64url"))?.equals(raw)).toBe(true)
    expect(signingKeyOf(null)).toBeUndefined()
    expect(signingKeyOf("")).toBeUndefined()
    expect(signingKeyOf(`${raw.toString("base64url")}=`)).toBeUndefined()
    expect(signingKeyOf(JSON.stringify({ key_id: "k1", alg: "aes-gcm-hkdf", nonce: "bm9uY2U", data: "ZGF0YQ" }))).toBeUndefined()
  })
})
