/**
 * JWT access tokens, wire-compatible with GoTrue (`internal/conf/jwk.go`, `internal/tokens/service.go`).
 *
 * All signing and verification is synchronous node:crypto on the main thread. jose's sign/verify go
 * through WebCrypto, whose jobs queue on the libuv threadpool behind bcrypt, so under login load a
 * token check would wait for password hashes; jose is used here only for JWK thumbprints.
 */
import * as crypto from "node:crypto"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { calculateJwkThumbprint, type JWK } from "jose"
import * as Jwt from "./Jwt.js"
import { traced } from "./Traced.js"

export type Algorithm = "HS256" | "RS256" | "RS512" | "ES256" | "ES512" | "EdDSA"

const algorithms: ReadonlyArray<string> = ["HS256", "RS256", "RS512", "ES256", "ES512", "EdDSA"]

const isAlgorithm = (alg: string): alg is Algorithm => algorithms.includes(alg)

export class JwtInvalid extends Data.TaggedError("JwtInvalid")<{
  readonly reason: "malformed" | "algorithm" | "signature" | "expired" | "unknown_key"
}> {}

/** Raised while building the layer. Messages name keys by kid or position, never by their material. */
export class TokenSignerConfigError extends Data.TaggedError("TokenSignerConfigError")<{
  readonly message: string
}> {}

export interface TokenSignerOptions {
  /** GOTRUE_JWT_SECRET: the raw string is the HS256 key. */
  readonly secret?: Redacted.Redacted<string>
  /** GOTRUE_JWT_KEYS: private JWKs; exactly one has key_ops containing "sign". Verify-only keys may be public. */
  readonly keys?: ReadonlyArray<JWK>
  /** GOTRUE_JWT_KEY_ID: the kid of the secret. */
  readonly keyId?: string
  /** GOTRUE_JWT_VALID_METHODS. */
  readonly validMethods?: ReadonlyArray<string>
}

export interface VerifiedJwt {
  readonly header: Jwt.Header
  readonly payload: Record<string, unknown>
}

export class TokenSigner extends Context.Tag("platform/TokenSigner")<
  TokenSigner,
  {
    /** Signs the claims as given: the caller sets iat and exp. */
    readonly sign: (claims: Record<string, unknown>) => Effect.Effect<string>
    readonly verify: (token: string) => Effect.Effect<VerifiedJwt, JwtInvalid>
    /** What /.well-known/jwks.json serves: public keys only, never HMAC secrets. */
    readonly jwks: { readonly keys: ReadonlyArray<JWK> }
    /** The algorithm `sign` uses (ID tokens are refused with HS256, whose key cannot be published). */
    readonly signingAlgorithm: Algorithm
  }
>() {}

interface Key {
  readonly kid: string | undefined
  readonly alg: Algorithm
  readonly verify: (input: Buffer, signature: Buffer) => boolean
  readonly sign: Option.Option<(input: Buffer) => Buffer>
  readonly publicJwk: Option.Option<JWK>
  readonly signing: boolean
}

const configError = (message: string): TokenSignerConfigError => new TokenSignerConfigError({ message })

const hmacKey = (kid: string | undefined, secret: crypto.KeyObject, signing: boolean): Key => {
  const mac = (input: Buffer): Buffer => crypto.createHmac("sha256", secret).update(input).digest()
  return {
    kid,
    alg: "HS256",
    verify: (input, signature) => signature.length === 32 && crypto.timingSafeEqual(mac(input), signature),
    sign: Option.some(mac),
    publicJwk: Option.none(),
    signing
  }
}

type AsymmetricAlgorithm = Exclude<Algorithm, "HS256">

// What each algorithm requires of the key, so a key is only ever used with the one algorithm it was
// configured for.
const keyShapes: Record<AsymmetricAlgorithm, { readonly type: crypto.KeyType; readonly curve?: string }> = {
  RS256: { type: "rsa" },
  RS512: { type: "rsa" },
  ES256: { type: "ec", curve: "prime256v1" },
  ES512: { type: "ec", curve: "secp521r1" },
  EdDSA: { type: "ed25519" }
}

const defaultAlgorithm = (key: crypto.KeyObject): AsymmetricAlgorithm | undefined => {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return "RS256"
    case "ec":
      return key.asymmetricKeyDetails?.namedCurve === "prime256v1"
        ? "ES256"
        : key.asymmetricKeyDetails?.namedCurve === "secp521r1"
          ? "ES512"
          : undefined
    case "ed25519":
      return "EdDSA"
    default:
      return undefined
  }
}

const fitsAlgorithm = (key: crypto.KeyObject, alg: AsymmetricAlgorithm): boolean => {
  const shape = keyShapes[alg]
  return key.asymmetricKeyType === shape.type &&
    (shape.curve === undefined || key.asymmetricKeyDetails?.namedCurve === shape.curve)
}

const asymmetricKey = (
  alg: AsymmetricAlgorithm,
  kid: string,
  publicKey: crypto.KeyObject,
  privateKey: crypto.KeyObject | undefined,
  signing: boolean
): Key => {
  const digest = alg === "EdDSA" ? null : alg.endsWith("256") ? "sha256" : "sha512"
  // JWS carries ECDSA signatures as raw r||s (RFC 7518 §3.4), not node's default DER.
  const dsaEncoding = alg.startsWith("ES") ? "ieee-p1363" : "der"
  return {
    kid,
    alg,
    verify: (input, signature) => {
      try {
        return crypto.verify(digest, input, { key: publicKey, dsaEncoding }, signature)
      } catch {
        // node throws rather than returning false on some malformed signatures (e.g. wrong length)
        return false
      }
    },
    sign: Option.fromNullable(privateKey).pipe(
      Option.map((key) => (input: Buffer) => crypto.sign(digest, input, { key, dsaEncoding }))
    ),
    publicJwk: Option.some({
      ...publicKey.export({ format: "jwk" }),
      kid,
      alg,
      use: "sig",
      key_ops: ["verify"]
    }),
    signing
  }
}

const loadKey = Effect.fnUntraced(function*(jwk: JWK, index: number) {
  const name = jwk.kid === undefined ? `JWT key #${index}` : `JWT key "${jwk.kid}"`
  const signing = jwk.key_ops?.includes("sign") ?? false
  const declaredAlg = jwk.alg
  if (declaredAlg !== undefined && !isAlgorithm(declaredAlg)) {
    return yield* configError(`${name}: unsupported alg ${declaredAlg} (supported: ${algorithms.join(", ")})`)
  }
  if (jwk.kty === "oct") {
    if (declaredAlg !== undefined && declaredAlg !== "HS256") {
      return yield* configError(`${name}: an oct key can only be used with HS256, not ${declaredAlg}`)
    }
    // An HMAC key's thumbprint would be a hash of the secret, so the kid has to be given.
    if (jwk.kid === undefined) return yield* configError(`${name}: an oct key needs a kid`)
    if (typeof jwk.k !== "string" || jwk.k.length === 0) return yield* configError(`${name}: an oct key needs k`)
    return hmacKey(jwk.kid, crypto.createSecretKey(Buffer.from(jwk.k, "base64url")), signing)
  }
  const isPrivate = jwk.d !== undefined
  if (signing && !isPrivate) {
    return yield* configError(`${name}: key_ops contains "sign" but this is a public key; a private JWK is needed`)
  }
  const privateKey = yield* Effect.try({
    try: () => isPrivate ? crypto.createPrivateKey({ key: jwk, format: "jwk" }) : undefined,
    // node's message can quote the offending member, so it is not passed on.
    catch: () => configError(`${name}: not a valid RSA, EC or OKP private JWK`)
  })
  const publicKey = yield* Effect.try({
    try: () =>
      privateKey === undefined
        ? crypto.createPublicKey({ key: jwk, format: "jwk" })
        : crypto.createPublicKey(privateKey),
    catch: () => configError(`${name}: not a valid RSA, EC or OKP public JWK`)
  })
  const alg = declaredAlg ?? defaultAlgorithm(publicKey)
  if (alg === undefined || alg === "HS256") {
    return yield* configError(`${name}: unsupported key type (supported: RSA, EC P-256, EC P-521, Ed25519)`)
  }
  if (!fitsAlgorithm(publicKey, alg)) return yield* configError(`${name}: the key type does not fit alg ${alg}`)
  // jose, and so auth-js getClaims, refuses RSA keys under 2048 bits; fail here rather than in every client.
  if (publicKey.asymmetricKeyType === "rsa" && (publicKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    return yield* configError(`${name}: RSA keys must be at least 2048 bits`)
  }
  const kid = jwk.kid ?? (yield* Effect.promise(() => calculateJwkThumbprint(publicKey.export({ format: "jwk" }))))
  return asymmetricKey(alg, kid, publicKey, privateKey, signing)
})

const make = Effect.fnUntraced(function*(options: TokenSignerOptions) {
  const keys = yield* Effect.forEach(options.keys ?? [], loadKey)
  const kids = keys.flatMap((key) => key.kid === undefined ? [] : [key.kid])
  const duplicate = [...kids, ...(options.keyId === undefined ? [] : [options.keyId])]
    .find((kid, i, all) => all.indexOf(kid) !== i)
  if (duplicate !== undefined) return yield* configError(`kid "${duplicate}" is used by more than one JWT key`)

  const secretKey = yield* Option.fromNullable(options.secret).pipe(
    Option.match({
      onNone: () => Effect.succeed(Option.none<Key>()),
      onSome: (secret) =>
        Redacted.value(secret).length === 0
          ? configError("the JWT secret is empty")
          : Effect.succeed(Option.some(hmacKey(
            options.keyId,
            crypto.createSecretKey(Buffer.from(Redacted.value(secret), "utf8")),
            keys.length === 0
          )))
    })
  )

  const signingKeys = [...keys, ...Option.toArray(secretKey)].filter((key) => key.signing)
  if (signingKeys.length !== 1) {
    return yield* configError(
      signingKeys.length > 1
        ? `exactly one JWT key may have key_ops containing "sign", found ${signingKeys.length}: ${
          signingKeys.map((key) => key.kid ?? "(no kid)").join(", ")
        }`
        : keys.length > 0
        ? `no JWT key has key_ops containing "sign"`
        : "no signing key: set a JWT secret or JWT keys"
    )
  }
  const signingKey = signingKeys[0]!
  // loadKey refuses a signing key without its private half, so this cannot throw.
  const sign = Option.getOrThrow(signingKey.sign)

  const validMethods = new Set<string>(
    options.validMethods ?? [...keys.map((key) => key.alg), ...Option.toArray(secretKey).map((key) => key.alg)]
  )
  const unsupported = [...validMethods].filter((alg) => !isAlgorithm(alg))
  if (unsupported.length > 0) return yield* configError(`unsupported JWT valid methods: ${unsupported.join(", ")}`)
  if (!validMethods.has(signingKey.alg)) {
    return yield* configError(`the signing algorithm ${signingKey.alg} is not among the JWT valid methods`)
  }

  const keysByKid = new Map(keys.flatMap((key) => key.kid === undefined ? [] : [[key.kid, key] as const]))
  // GoTrue's lookup: the kid picks a key from the set, or the secret when it is JWT_KEY_ID; HS256
  // tokens without a known kid fall back to the secret, as tokens minted before key ids existed have none.
  const resolveKey = (header: Jwt.Header): Option.Option<Key> => {
    const byKid = header.kid === undefined
      ? Option.none()
      : Option.fromNullable(keysByKid.get(header.kid)).pipe(
        Option.orElse(() => header.kid === options.keyId ? secretKey : Option.none())
      )
    return Option.orElse(byKid, () => header.alg === "HS256" ? secretKey : Option.none())
  }

  const headerSegment = Jwt.encodeSegment(
    signingKey.kid === undefined
      ? { alg: signingKey.alg, typ: "JWT" }
      : { alg: signingKey.alg, typ: "JWT", kid: signingKey.kid }
  )

  return TokenSigner.of({
    sign: traced("TokenSigner.sign")((claims: Record<string, unknown>) =>
      Effect.sync(() => {
        const input = `${headerSegment}.${Jwt.encodeSegment(claims)}`
        return `${input}.${sign(Buffer.from(input, "ascii")).toString("base64url")}`
      })
    ),
    verify: traced("TokenSigner.verify")(function*(token: string) {
      const decoded = Jwt.decode(token)
      if (Option.isNone(decoded)) return yield* new JwtInvalid({ reason: "malformed" })
      const { header, payload, signingInput, signature } = decoded.value
      // "none" is never a valid method (the set is checked above), so unsigned tokens end here.
      if (!validMethods.has(header.alg)) return yield* new JwtInvalid({ reason: "algorithm" })
      const key = resolveKey(header)
      if (Option.isNone(key)) return yield* new JwtInvalid({ reason: "unknown_key" })
      // Each key verifies only its own algorithm: this is what stops an HS256 token "signed" with a
      // public key's bytes as the HMAC secret from being checked against that public key.
      if (key.value.alg !== header.alg) return yield* new JwtInvalid({ reason: "algorithm" })
      if (!key.value.verify(signingInput, signature)) return yield* new JwtInvalid({ reason: "signature" })
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const { exp, nbf } = payload
      // exp is optional (RFC 7519 §4.1.4), as in GoTrue: many Supabase anon and service_role keys in the wild
      // have none. Tokens this server issues always carry one.
      if ((exp !== undefined && typeof exp !== "number") || (nbf !== undefined && typeof nbf !== "number")) {
        return yield* new JwtInvalid({ reason: "malformed" })
      }
      // Invalid on or after exp, compared in whole seconds as jose does.
      if ((exp !== undefined && exp <= now) || (nbf !== undefined && nbf > now)) {
        return yield* new JwtInvalid({ reason: "expired" })
      }
      return { header, payload }
    }),
    jwks: { keys: keys.flatMap((key) => Option.toArray(key.publicJwk)) },
    signingAlgorithm: signingKey.alg
  })
})

export const TokenSignerLive = (options: TokenSignerOptions): Layer.Layer<TokenSigner, TokenSignerConfigError> =>
  Layer.effect(TokenSigner, make(options))

/** The production code path over a fixed HS256 secret. */
export const TokenSignerTest: Layer.Layer<TokenSigner> = Layer.effect(
  TokenSigner,
  make({ secret: Redacted.make("gatehouse-test-jwt-secret-with-at-least-32-characters") })
).pipe(Layer.orDie)
