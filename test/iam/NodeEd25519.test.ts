import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { PublicProtocol } from "paseto"
import * as V4 from "paseto/v4/public"
import { nodeV4 } from "../../src/iam/tokens/NodeEd25519.js"
import { generatePaserk } from "../../src/iam/tokens/IamKeys.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"

// The paseto library's own v4.public (Ed25519 on WebCrypto): the reference our node:crypto step must agree with.
const reference = new PublicProtocol(V4.SignFactory, V4.VerifyFactory, V4.ImportSecretKeyFactory, V4.ImportPublicKeyFactory)

type Secret = `k4.secret.${string}`
type Public = `k4.public.${string}`

const newPair = () => Effect.runSync(Effect.provide(generatePaserk, SecureRandom.Live))
const pair = newPair()
const other = newPair()
const now = new Date("2026-11-24T00:00:00Z")
const exp = "2026-11-24T01:00:00Z"

const claims = FastCheck.record({
  sub: FastCheck.string({ maxLength: 20 }),
  jti: FastCheck.uuid(),
  roles: FastCheck.array(FastCheck.string({ maxLength: 10 }), { maxLength: 3 })
})
const footer = FastCheck.option(FastCheck.string({ maxLength: 40 }), { nil: undefined })

const options = (text: string | undefined) => ({ now, ...(text === undefined ? {} : { footer: new TextEncoder().encode(text) }) })

describe("PASETO v4.public on node:crypto", () => {
  it.effect.prop("verifies what the reference signs, and the reference verifies what it signs", { claims, footer }, ({ claims, footer }) =>
    Effect.promise(async () => {
      const ours = { secret: await nodeV4.ImportSecretKey(pair.secret as Secret), public: await nodeV4.ImportPublicKey(pair.public as Public) }
      const theirs = { secret: await reference.ImportSecretKey(pair.secret as Secret), public: await reference.ImportPublicKey(pair.public as Public) }
      const byReference = await reference.Sign(theirs.secret, { ...claims, exp }, options(footer))
      const byUs = await nodeV4.Sign(ours.secret, { ...claims, exp }, options(footer))
      // Ed25519 is deterministic: the same key, claims and footer give the same token.
      expect(byUs).toBe(byReference)
      expect((await nodeV4.Verify(ours.public, byReference, { now })).claims).toStrictEqual({ ...claims, exp, iat: "2026-11-24T00:00:00Z" })
      expect((await reference.Verify(theirs.public, byUs, { now })).claims).toStrictEqual({ ...claims, exp, iat: "2026-11-24T00:00:00Z" })
    }), { fastCheck: { numRuns: 25 } })

  it.effect("refuses a tampered payload, a tampered footer, another key's token and an expired one", () =>
    Effect.promise(async () => {
      const secret = await nodeV4.ImportSecretKey(pair.secret as Secret)
      const key = await nodeV4.ImportPublicKey(pair.public as Public)
      const token = await nodeV4.Sign(secret, { sub: "1", exp }, options("{\"kid\":\"a\"}"))
      const [, , payload, foot] = token.split(".")
      const bytes = Buffer.from(payload!, "base64url")
      bytes[3] = bytes[3]! ^ 1
      const tampered = `v4.public.${bytes.toString("base64url")}.${foot}`
      const otherFooter = `v4.public.${payload}.${Buffer.from("{\"kid\":\"b\"}").toString("base64url")}`
      const foreign = await nodeV4.Sign(await nodeV4.ImportSecretKey(other.secret as Secret), { sub: "1", exp }, options(undefined))
      for (const bad of [tampered, otherFooter, foreign]) {
        await expect(nodeV4.Verify(key, bad, { now })).rejects.toMatchObject({ code: "ERR_PASETO_INVALID_TOKEN" })
      }
      await expect(nodeV4.Verify(key, token, { now: new Date("2026-11-24T02:00:00Z") })).rejects.toMatchObject({ code: "ERR_PASETO_CLAIM_VALIDATION", claim: "exp" })
    }))

  it.effect("refuses malformed keys: wrong prefix, wrong length, a secret whose public half is not its own", () =>
    Effect.promise(async () => {
      const mismatched = `k4.secret.${Buffer.concat([
        Buffer.from(pair.secret.slice(10), "base64url").subarray(0, 32),
        Buffer.from(other.public.slice(10), "base64url")
      ]).toString("base64url")}`
      for (const bad of [mismatched, "k4.secret.AAAA", pair.public]) await expect(nodeV4.ImportSecretKey(bad as Secret)).rejects.toThrow()
      for (const bad of ["k4.public.AAAA", pair.secret]) await expect(nodeV4.ImportPublicKey(bad as Public)).rejects.toThrow()
    }))
})
