import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck, Redacted, TestClock } from "effect"
import { createLocalJWKSet, type JWK, jwtVerify, SignJWT } from "jose"
import * as crypto from "node:crypto"
import {
  type Algorithm,
  TokenSigner,
  TokenSignerLive,
  type TokenSignerOptions,
  TokenSignerTest
} from "../../src/platform/TokenSigner.js"

type AsymmetricAlgorithm = Exclude<Algorithm, "HS256">

const asymmetric: ReadonlyArray<AsymmetricAlgorithm> = ["RS256", "RS512", "ES256", "ES512", "EdDSA"]

const generate = (alg: AsymmetricAlgorithm): crypto.KeyObject => {
  switch (alg) {
    case "RS256":
    case "RS512":
      return crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey
    case "ES256":
      return crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
    case "ES512":
      return crypto.generateKeyPairSync("ec", { namedCurve: "P-521" }).privateKey
    case "EdDSA":
      return crypto.generateKeyPairSync("ed25519").privateKey
  }
}

const privateKeys = new Map(asymmetric.map((alg) => [alg, generate(alg)] as const))

/** A GOTRUE_JWT_KEYS entry: a private JWK, marked for signing or for verification only. */
const jwkFor = (alg: AsymmetricAlgorithm, ops: "sign" | "verify" = "verify"): JWK => ({
  ...privateKeys.get(alg)!.export({ format: "jwk" }),
  kid: `kid-${alg}`,
  alg,
  key_ops: [ops]
})

/** All five asymmetric keys, `signer` signing and the others verify-only, as during a rotation. */
const keySet = (signer: AsymmetricAlgorithm): ReadonlyArray<JWK> =>
  asymmetric.map((alg) => jwkFor(alg, alg === signer ? "sign" : "verify"))

const secretText = "super-secret-jwt-token-with-at-least-32-characters-long"
const secret = Redacted.make(secretText)
const secretBytes = new TextEncoder().encode(secretText)

const hmacJwk: JWK = {
  kty: "oct",
  kid: "hmac-1",
  k: Buffer.from("an-hmac-key-of-thirty-two-bytes!").toString("base64url")
}

const signer = (options: TokenSignerOptions) => TokenSigner.pipe(Effect.provide(TokenSignerLive(options)))

const configError = (options: TokenSignerOptions) => Effect.flip(signer(options))

// 2100-01-01: far enough ahead for jose, which checks exp against the real clock.
const future = 4_102_444_800

const claims = {
  iss: "http://localhost:9999/auth/v1",
  sub: "8b6a4d8e-6f55-4c1e-9d2a-2f3c1b0e9a77",
  aud: "authenticated",
  exp: future,
  iat: 1_700_000_000,
  email: "ada@example.com",
  phone: "",
  app_metadata: { provider: "email", providers: ["email"] },
  user_metadata: {},
  role: "authenticated",
  aal: "aal1",
  amr: [{ method: "password", timestamp: 1_700_000_000 }],
  session_id: "0f6f1a51-0d1c-4f4f-bb4f-4b8f4f9b3c11",
  is_anonymous: false
}

const segment = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url")

/** A compact JWS built by hand, for tokens no honest signer would produce. */
const forge = (header: object, payload: object, sign: (input: string) => Buffer): string => {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${sign(input).toString("base64url")}`
}

const hmac = (key: crypto.BinaryLike) => (input: string): Buffer =>
  crypto.createHmac("sha256", key).update(input).digest()

const reasonOf = (token: string) =>
  Effect.flatMap(TokenSigner, (tokens) => tokens.verify(token)).pipe(
    Effect.flip,
    Effect.map((error) => error.reason)
  )

const privateMembers = ["d", "p", "q", "dp", "dq", "qi", "k"]

describe("TokenSigner", () => {
  describe("HS256 with the JWT secret", () => {
    it.effect("signs tokens that jose verifies with the same secret", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({ secret, keyId: "legacy" })
        const token = yield* tokens.sign(claims)
        const { payload, protectedHeader } = yield* Effect.promise(() =>
          jwtVerify(token, secretBytes, { algorithms: ["HS256"] })
        )
        expect(protectedHeader).toEqual({ alg: "HS256", typ: "JWT", kid: "legacy" })
        expect(payload).toEqual(claims)
      }))

    it.effect("without a key id the header has no kid", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({ secret })
        const { header } = yield* tokens.verify(yield* tokens.sign(claims))
        expect(header).toEqual({ alg: "HS256", typ: "JWT" })
      }))

    it.effect("verifies tokens jose signed, with the key id, without a kid, or with a stray kid", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({ secret, keyId: "legacy" })
        for (const kid of ["legacy", undefined, "minted-elsewhere"]) {
          const token = yield* Effect.promise(() =>
            new SignJWT(claims).setProtectedHeader(kid === undefined ? { alg: "HS256" } : { alg: "HS256", kid })
              .sign(secretBytes)
          )
          expect((yield* tokens.verify(token)).payload).toEqual(claims)
        }
      }))

    it.effect("rejects a token signed with another secret", () =>
      Effect.gen(function*() {
        const other = yield* signer({ secret: Redacted.make("another-secret-of-a-reasonable-length!!") })
        const token = yield* other.sign(claims)
        expect(yield* reasonOf(token).pipe(Effect.provide(TokenSignerLive({ secret })))).toBe("signature")
      }))
  })

  describe.each(asymmetric)("%s", (alg) => {
    it.effect("signs with the signing key; jose verifies through the published JWKS", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({ secret, keys: keySet(alg) })
        const token = yield* tokens.sign(claims)
        const jwks = createLocalJWKSet({ keys: [...tokens.jwks.keys] })
        const { payload, protectedHeader } = yield* Effect.promise(() => jwtVerify(token, jwks))
        expect(protectedHeader).toEqual({ alg, typ: "JWT", kid: `kid-${alg}` })
        expect(payload).toEqual(claims)
        expect((yield* tokens.verify(token)).payload).toEqual(claims)
      }))

    it.effect("verifies tokens signed by the previous key after a rotation", () =>
      Effect.gen(function*() {
        const next = asymmetric[(asymmetric.indexOf(alg) + 1) % asymmetric.length]!
        const before = yield* signer({ keys: keySet(alg) })
        const after = yield* signer({ keys: keySet(next) })
        const token = yield* before.sign(claims)
        expect((yield* after.verify(token)).header).toEqual({ alg, typ: "JWT", kid: `kid-${alg}` })
      }))

    it.effect("verifies with a public verify-only key", () =>
      Effect.gen(function*() {
        const owner = yield* signer({ keys: [jwkFor(alg, "sign")] })
        const verifier = yield* signer({ keys: [...owner.jwks.keys, { ...hmacJwk, key_ops: ["sign"] }] })
        expect((yield* verifier.verify(yield* owner.sign(claims))).payload).toEqual(claims)
      }))
  })

  describe("rejections", () => {
    const rs256 = TokenSignerLive({ secret, keys: [jwkFor("RS256", "sign")], validMethods: ["RS256", "HS256"] })

    it.effect("alg none", () =>
      Effect.gen(function*() {
        const unsigned = `${segment({ alg: "none", typ: "JWT" })}.${segment(claims)}.`
        expect(yield* reasonOf(unsigned)).toBe("algorithm")
        const withKid = `${segment({ alg: "none", kid: "kid-RS256" })}.${segment(claims)}.`
        expect(yield* reasonOf(withKid)).toBe("algorithm")
      }).pipe(Effect.provide(rs256)))

    it.effect("an HS256 token keyed with an RS256 public key (algorithm confusion)", () =>
      Effect.gen(function*() {
        const publicKey = crypto.createPublicKey(privateKeys.get("RS256")!)
        const asHmacKeys = [
          publicKey.export({ format: "pem", type: "spki" }),
          publicKey.export({ format: "der", type: "spki" }),
          JSON.stringify(publicKey.export({ format: "jwk" }))
        ]
        for (const key of asHmacKeys) {
          const sign = hmac(key)
          expect(yield* reasonOf(forge({ alg: "HS256", typ: "JWT", kid: "kid-RS256" }, claims, sign)))
            .toBe("algorithm")
          // Without the kid the token goes to the JWT secret, which it was not signed with.
          expect(yield* reasonOf(forge({ alg: "HS256", typ: "JWT" }, claims, sign))).toBe("signature")
        }
      }).pipe(Effect.provide(rs256)))

    it.effect("an RS256 token naming the secret's kid", () =>
      Effect.gen(function*() {
        const token = forge(
          { alg: "RS256", kid: "legacy" },
          claims,
          (input) => crypto.sign("sha256", Buffer.from(input), privateKeys.get("RS256")!)
        )
        expect(yield* reasonOf(token)).toBe("algorithm")
      }).pipe(Effect.provide(TokenSignerLive({ secret, keyId: "legacy", keys: keySet("RS256") }))))

    it.effect("a tampered payload, header or signature", () =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const [header, , signature] = (yield* tokens.sign(claims)).split(".")
        const [otherHeader] = forge({ alg: "RS256", typ: "JWT", kid: "kid-RS256", x: 1 }, {}, () => Buffer.alloc(0))
          .split(".")
        expect(yield* reasonOf(`${header}.${segment({ ...claims, role: "service_role" })}.${signature}`))
          .toBe("signature")
        expect(yield* reasonOf(`${otherHeader}.${segment(claims)}.${signature}`)).toBe("signature")
        const flipped = Buffer.from(signature!, "base64url")
        flipped[0] = flipped[0]! ^ 1
        expect(yield* reasonOf(`${header}.${segment(claims)}.${flipped.toString("base64url")}`)).toBe("signature")
      }).pipe(Effect.provide(rs256)))

    it.effect("a signature of the wrong length", () =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const [header, payload, signature] = (yield* tokens.sign(claims)).split(".")
        const short = Buffer.from(signature!, "base64url").subarray(1).toString("base64url")
        expect(yield* reasonOf(`${header}.${payload}.${short}`)).toBe("signature")
        expect(yield* reasonOf(`${header}.${payload}.`)).toBe("signature")
      }).pipe(Effect.provide(TokenSignerLive({ keys: [jwkFor("ES256", "sign")] }))))

    it.effect("an unknown kid, and an asymmetric token without a kid", () =>
      Effect.gen(function*() {
        const stranger = yield* signer({ keys: [{ ...jwkFor("ES256", "sign"), kid: "stranger" }] })
        expect(yield* reasonOf(yield* stranger.sign(claims))).toBe("unknown_key")
        const noKid = forge(
          { alg: "ES256" },
          claims,
          (input) =>
            crypto.sign("sha256", Buffer.from(input), { key: privateKeys.get("ES256")!, dsaEncoding: "ieee-p1363" })
        )
        expect(yield* reasonOf(noKid)).toBe("unknown_key")
      }).pipe(Effect.provide(TokenSignerLive({ keys: keySet("ES256") }))))

    it.effect("an algorithm outside the valid methods", () =>
      Effect.gen(function*() {
        const hs256 = yield* (yield* signer({ secret })).sign(claims)
        expect(yield* reasonOf(hs256)).toBe("algorithm")
      }).pipe(Effect.provide(TokenSignerLive({ secret, keys: keySet("ES256"), validMethods: ["ES256"] }))))

    it.effect("HS256 when there is no secret", () =>
      Effect.gen(function*() {
        const hs256 = yield* (yield* signer({ secret })).sign(claims)
        expect(yield* reasonOf(hs256)).toBe("unknown_key")
      }).pipe(Effect.provide(TokenSignerLive({ keys: keySet("ES256"), validMethods: ["ES256", "HS256"] }))))

    it.effect.each([
      ["empty", ""],
      ["two segments", `${segment({ alg: "HS256" })}.${segment(claims)}`],
      ["four segments", `${segment({ alg: "HS256" })}.${segment(claims)}.c2ln.c2ln`],
      ["header not JSON", `bm90IGpzb24.${segment(claims)}.c2ln`],
      ["header without alg", `${segment({ typ: "JWT" })}.${segment(claims)}.c2ln`],
      ["crit header", `${segment({ alg: "HS256", crit: ["b64"], b64: false })}.${segment(claims)}.c2ln`],
      ["payload an array", `${segment({ alg: "HS256" })}.${segment([claims])}.c2ln`],
      ["padded segment", `${segment({ alg: "HS256" })}=.${segment(claims)}.c2ln`],
      ["standard base64", `${Buffer.from(JSON.stringify({ alg: "HS256", x: "??>" })).toString("base64")}.e30.c2ln`]
    ])("a malformed token: %s", ([, token]) =>
      Effect.gen(function*() {
        expect(yield* reasonOf(token)).toBe("malformed")
      }).pipe(Effect.provide(TokenSignerTest)))
  })

  describe("time, from Effect's Clock", () => {
    it.effect("valid before exp, expired from exp on", () =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const token = yield* tokens.sign({ ...claims, exp: 1_000 })
        yield* TestClock.setTime(999_999)
        expect((yield* tokens.verify(token)).payload["exp"]).toBe(1_000)
        yield* TestClock.setTime(1_000_000)
        expect(yield* reasonOf(token)).toBe("expired")
      }).pipe(Effect.provide(TokenSignerTest)))

    it.effect("a validly signed token without exp is accepted, as GoTrue accepts Supabase's exp-less keys", () =>
      Effect.gen(function*() {
        const { exp: _, ...withoutExp } = claims
        const tokens = yield* TokenSigner
        const token = yield* tokens.sign(withoutExp)
        expect((yield* tokens.verify(token)).payload).toEqual(withoutExp)
        const [header, payload, signature] = token.split(".") as [string, string, string]
        const forged = `${header}.${payload}.${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`
        expect(yield* reasonOf(forged)).toBe("signature")
      }).pipe(Effect.provide(TokenSignerTest)))

    it.effect("a token before its nbf is not yet valid", () =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const token = yield* tokens.sign({ ...claims, nbf: 500 })
        yield* TestClock.setTime(499_999)
        expect(yield* reasonOf(token)).toBe("expired")
        yield* TestClock.setTime(500_000)
        expect((yield* tokens.verify(token)).payload).toEqual({ ...claims, nbf: 500 })
      }).pipe(Effect.provide(TokenSignerTest)))

    it.effect("a non-numeric exp is malformed", () =>
      Effect.gen(function*() {
        const token = yield* (yield* TokenSigner).sign({ ...claims, exp: String(future) })
        expect(yield* reasonOf(token)).toBe("malformed")
      }).pipe(Effect.provide(TokenSignerTest)))
  })

  describe("jwks", () => {
    it.effect("publishes public keys only, never the secret or oct keys", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({
          secret,
          keyId: "legacy",
          keys: [...keySet("EdDSA"), hmacJwk]
        })
        expect(tokens.jwks.keys.map((key) => key.kid)).toEqual(asymmetric.map((alg) => `kid-${alg}`))
        for (const key of tokens.jwks.keys) {
          expect(key.kty).not.toBe("oct")
          expect(Object.keys(key).filter((member) => privateMembers.includes(member))).toEqual([])
          expect(key).toMatchObject({ use: "sig", key_ops: ["verify"] })
          expect(asymmetric).toContain(key.alg)
        }
      }))

    it.effect("names a key without a kid by its RFC 7638 thumbprint", () =>
      Effect.gen(function*() {
        const { kid: _, ...withoutKid } = jwkFor("ES256", "sign")
        const tokens = yield* signer({ keys: [withoutKid] })
        const [published] = tokens.jwks.keys
        const token = yield* tokens.sign(claims)
        expect(published!.kid).toMatch(/^[A-Za-z0-9_-]{43}$/)
        expect((yield* tokens.verify(token)).header.kid).toBe(published!.kid)
      }))

    it.effect("an oct key in the key set signs and verifies HS256 under its kid", () =>
      Effect.gen(function*() {
        const tokens = yield* signer({ keys: [{ ...hmacJwk, key_ops: ["sign"] }] })
        const token = yield* tokens.sign(claims)
        expect(tokens.jwks.keys).toEqual([])
        const { protectedHeader } = yield* Effect.promise(() =>
          jwtVerify(token, Buffer.from(hmacJwk.k!, "base64url"))
        )
        expect(protectedHeader).toEqual({ alg: "HS256", typ: "JWT", kid: "hmac-1" })
        expect((yield* tokens.verify(token)).payload).toEqual(claims)
      }))
  })

  describe("configuration errors", () => {
    const leaks = (message: string): boolean =>
      message.includes(secretText) ||
      asymmetric.some((alg) => {
        const d = privateKeys.get(alg)!.export({ format: "jwk" }).d!
        return message.includes(d)
      })

    const signing = (jwk: crypto.JsonWebKey, kid: string): JWK => ({ ...jwk, kid, key_ops: ["sign"] })
    const p384 = crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({ format: "jwk" })
    const rsa1024 = crypto.generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ format: "jwk" })
    const es256Public = crypto.createPublicKey(privateKeys.get("ES256")!).export({ format: "jwk" })

    it.effect.each<readonly [string, TokenSignerOptions, RegExp]>([
      ["no secret and no keys", {}, /no signing key/],
      ["an empty secret", { secret: Redacted.make("") }, /secret is empty/],
      [
        "keys but no signing key",
        { secret, keys: asymmetric.map((alg) => jwkFor(alg)) },
        /no JWT key has key_ops containing "sign"/
      ],
      [
        "two signing keys",
        { keys: [jwkFor("ES256", "sign"), jwkFor("EdDSA", "sign")] },
        /exactly one .* found 2: kid-ES256, kid-EdDSA/
      ],
      [
        "an unsupported alg",
        { keys: [{ ...jwkFor("RS256", "sign"), alg: "PS256" }] },
        /"kid-RS256": unsupported alg PS256/
      ],
      [
        "an unsupported curve",
        { keys: [signing(p384, "p384")] },
        /"p384": unsupported key type/
      ],
      [
        "an alg that does not fit the key",
        { keys: [{ ...jwkFor("ES256", "sign"), alg: "ES512" }] },
        /does not fit alg ES512/
      ],
      [
        "a public key for signing",
        { keys: [signing(es256Public, "pub")] },
        /"pub": .*public key; a private JWK is needed/
      ],
      [
        "a broken private key",
        { keys: [{ ...jwkFor("ES256", "sign"), x: "AAAA" }] },
        /not a valid RSA, EC or OKP private JWK/
      ],
      [
        "a short RSA key",
        { keys: [signing(rsa1024, "rsa-1024")] },
        /at least 2048 bits/
      ],
      [
        "an oct key without a kid",
        { keys: [{ kty: "oct", k: "c2VjcmV0", key_ops: ["sign"] }] },
        /oct key needs a kid/
      ],
      [
        "a duplicate kid",
        { keys: [jwkFor("ES256", "sign"), { ...jwkFor("EdDSA"), kid: "kid-ES256" }] },
        /kid "kid-ES256" is used by more than one/
      ],
      [
        "the secret's kid reused by a key",
        { secret, keyId: "kid-ES256", keys: keySet("ES256") },
        /kid "kid-ES256"/
      ],
      [
        "an unsupported valid method",
        { secret, validMethods: ["HS256", "none"] },
        /unsupported JWT valid methods: none/
      ],
      [
        "a signing alg outside the valid methods",
        { keys: keySet("ES256"), validMethods: ["RS256"] },
        /signing algorithm ES256 is not among/
      ]
    ])("%s", ([, options, message]) =>
      Effect.gen(function*() {
        const error = yield* configError(options)
        expect(error._tag).toBe("TokenSignerConfigError")
        expect(error.message).toMatch(message)
        expect(leaks(error.message)).toBe(false)
      }))
  })

  describe("round trip", () => {
    const claimObjects = FastCheck.dictionary(FastCheck.string(), FastCheck.jsonValue())
    // A JWT carries JSON, so the payload equals the claims' JSON form (-0, for one, comes back as 0).
    const asJson = (value: unknown) => JSON.parse(JSON.stringify(value))

    it.effect.prop("HS256: verify(sign(c)).payload equals c", [claimObjects], ([random]) =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const claims = { ...random, exp: future }
        expect((yield* tokens.verify(yield* tokens.sign(claims))).payload).toEqual(asJson(claims))
      }).pipe(Effect.provide(TokenSignerTest)))

    it.effect.prop("ES256: verify(sign(c)).payload equals c", [claimObjects], ([random]) =>
      Effect.gen(function*() {
        const tokens = yield* TokenSigner
        const claims = { ...random, exp: future }
        expect((yield* tokens.verify(yield* tokens.sign(claims))).payload).toEqual(asJson(claims))
      }).pipe(Effect.provide(TokenSignerLive({ keys: [jwkFor("ES256", "sign")] }))), { fastCheck: { numRuns: 50 } })
  })
})
