import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { isSignedWith, parseSignedRefreshToken } from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import {
  deriveFirstFormRefreshToken,
  deriveRefreshToken,
  digestRefreshToken,
  isSignedFormRow,
  isWellFormedRefreshToken,
  refreshTokenKey,
  refreshTokenLookupKey,
  sessionSigningKey,
  tokenOfRow
} from "../../../src/auth/sessions/RefreshTokenCodec.js"

const secret = FastCheck.string({ minLength: 1, maxLength: 64 })
const sessionId = FastCheck.uuid()
const rowId = FastCheck.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String)

describe("RefreshTokenCodec", () => {
  it("derives a fixed token for a fixed key, session and row", () => {
    const key = refreshTokenKey("test-secret-that-is-at-least-32-characters-long")
    const token = deriveRefreshToken(key, "6f1c0b8e-8a53-4a5e-9a36-0d0f6f5b6c11", "42")
    expect(token).toBe(deriveRefreshToken(key, "6f1c0b8e-8a53-4a5e-9a36-0d0f6f5b6c11", "42"))
    // GoTrue's signed form: 1 + 16 + 1 + 16 + 4 bytes for a counter below 128.
    expect(token).toMatch(/^[A-Za-z0-9_-]{51}$/)
    expect(digestRefreshToken(token)).toMatch(/^[0-9a-f]{64}$/)
    expect(digestRefreshToken(token)).not.toContain(token)
  })

  it.prop("a token is GoTrue's signed form naming its session, with the row id as the counter, signed with the session's derived key",
    [secret, sessionId, rowId], ([s, sid, row]) => {
      const key = refreshTokenKey(s)
      const parsed = parseSignedRefreshToken(deriveRefreshToken(key, sid, row))
      expect(parsed).toMatchObject({ sessionId: sid, counter: BigInt(row) })
      expect(isSignedWith(parsed!, sessionSigningKey(key, sid))).toBe(true)
      // Another session's key (what export-sessions would write for it) does not sign it.
      expect(isSignedWith(parsed!, sessionSigningKey(key, sid === "00000000-0000-4000-8000-000000000000" ? "00000000-0000-4000-8000-000000000001" : "00000000-0000-4000-8000-000000000000"))).toBe(false)
    })

  it.prop("a row stands for the token whose digest it holds, of either form; the first form is 43 characters", [secret, sessionId, rowId], ([s, sid, row]) => {
    const key = refreshTokenKey(s)
    const signed = deriveRefreshToken(key, sid, row)
    const first = deriveFirstFormRefreshToken(key, sid, row)
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(isWellFormedRefreshToken(first)).toBe(true)
    expect(tokenOfRow(key, sid, { id: row, token: digestRefreshToken(signed) })).toBe(signed)
    expect(tokenOfRow(key, sid, { id: row, token: digestRefreshToken(first) })).toBe(first)
  })

  it.prop("derivation is deterministic per (key, session, row)", [secret, sessionId, rowId], ([s, sid, row]) => {
    expect(deriveRefreshToken(refreshTokenKey(s), sid, row)).toBe(deriveRefreshToken(refreshTokenKey(s), sid, row))
  })

  it.prop("different rows of one session give different tokens and digests", [secret, sessionId, rowId, rowId], ([s, sid, a, b]) => {
    FastCheck.pre(a !== b)
    const key = refreshTokenKey(s)
    const [ta, tb] = [deriveRefreshToken(key, sid, a), deriveRefreshToken(key, sid, b)]
    expect(ta).not.toBe(tb)
    expect(digestRefreshToken(ta)).not.toBe(digestRefreshToken(tb))
  })

  it.prop("one row id in different sessions gives different tokens", [secret, sessionId, sessionId, rowId], ([s, a, b, row]) => {
    FastCheck.pre(a !== b)
    const key = refreshTokenKey(s)
    expect(deriveRefreshToken(key, a, row)).not.toBe(deriveRefreshToken(key, b, row))
  })

  it.prop("different secrets give different tokens for the same session and row", [secret, secret, sessionId, rowId], ([a, b, sid, row]) => {
    FastCheck.pre(a !== b)
    expect(deriveRefreshToken(refreshTokenKey(a), sid, row)).not.toBe(deriveRefreshToken(refreshTokenKey(b), sid, row))
  })

  it.prop("every derived token is well-formed", [secret, sessionId, rowId], ([s, sid, row]) => {
    expect(isWellFormedRefreshToken(deriveRefreshToken(refreshTokenKey(s), sid, row))).toBe(true)
  })

  it("accepts GoTrue's 12-character legacy tokens", () => {
    expect(isWellFormedRefreshToken("abcdefgh2345")).toBe(true)
  })

  it("rejects junk", () => {
    const derived = deriveRefreshToken(refreshTokenKey("s"), "6f1c0b8e-8a53-4a5e-9a36-0d0f6f5b6c11", "1")
    const first = deriveFirstFormRefreshToken(refreshTokenKey("s"), "6f1c0b8e-8a53-4a5e-9a36-0d0f6f5b6c11", "1")
    for (const junk of ["", " ", "abc", first.slice(1), `${first}A`, `${first.slice(0, 42)}=`, `${derived.slice(0, 50)}=`,
      `${first.slice(0, 42)}+`, ` ${derived.slice(1)}`, `${derived}AA`, "ABCDEFGH2345", "abcdefgh234!", "abcdefgh23456",
      "' OR 1=1 --", "a".repeat(10_000)]) {
      expect(isWellFormedRefreshToken(junk), JSON.stringify(junk.slice(0, 50))).toBe(false)
    }
  })

  it.prop("rejects strings of the wrong length or alphabet",
    [FastCheck.oneof(FastCheck.string({ maxLength: 80 }), FastCheck.stringMatching(/^[A-Za-z0-9_-]{40,70}$/))], ([s]) => {
    const base64url = /^[A-Za-z0-9_-]*$/.test(s)
    // GoTrue's signed tokens: 38 to 47 bytes, so 51 to 63 characters (never a length of 4n + 1).
    const signed = base64url && s.length >= 51 && s.length <= 63 && s.length % 4 !== 1
    const plausible = (base64url && s.length === 43) || (/^[a-z0-9]*$/.test(s) && s.length === 12) || signed
    expect(isWellFormedRefreshToken(s)).toBe(plausible)
  })

  it.prop("looks a Gatehouse token up by its digest and a GoTrue legacy token by itself; neither can stand for the other",
    [secret, sessionId, rowId, FastCheck.stringMatching(/^[a-z0-9]{12}$/)], ([s, sid, row, legacy]) => {
      const derived = deriveRefreshToken(refreshTokenKey(s), sid, row)
      expect(refreshTokenLookupKey(derived)).toBe(digestRefreshToken(derived))
      expect(refreshTokenLookupKey(legacy)).toBe(legacy)
      // A stored digest (64 hex) is no well-formed token: it cannot be presented to find its row.
      expect(isWellFormedRefreshToken(digestRefreshToken(derived))).toBe(false)
    })

  it.prop("recognises a row of the signed form under its key, session and id only; never a first-form row",
    [secret, secret, sessionId, rowId], ([s, other, sid, row]) => {
      const key = refreshTokenKey(s)
      const signed = { id: row, session_id: sid, token: digestRefreshToken(deriveRefreshToken(key, sid, row)) }
      expect(isSignedFormRow(key, signed)).toBe(true)
      expect(isSignedFormRow(key, { ...signed, id: `${row}0` })).toBe(false)
      if (other !== s) expect(isSignedFormRow(refreshTokenKey(other), signed)).toBe(false)
      expect(isSignedFormRow(key, { ...signed, token: digestRefreshToken(deriveFirstFormRefreshToken(key, sid, row)) })).toBe(false)
    })
})
