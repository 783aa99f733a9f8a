import { createHash, createPrivateKey, createPublicKey } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { IamConfig } from "../../config/IamConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { type Ed25519Key, nodeV4 } from "./NodeEd25519.js"

/** PASETO v4.public as Gatehouse signs and verifies it (the Ed25519 step on node:crypto: NodeEd25519). */
export const v4 = nodeV4

export class IamStartupError extends Data.TaggedError("IamStartupError")<{ readonly message: string }> {}

/** A key as published at /auth/keys: enough for a resource server to verify tokens itself. */
export interface PublishedKey {
  readonly kid: string
  readonly version: "v4"
  readonly purpose: "public"
  /** PASERK k4.public. */
  readonly paserk: string
}

export class IamKeys extends Context.Tag("iam/IamKeys")<IamKeys, {
  readonly signing: { readonly kid: string; readonly key: Ed25519Key }
  /** Every key a token may name in its footer: the signing key's public half and the previous keys. */
  readonly verifying: ReadonlyMap<string, Ed25519Key>
  readonly published: ReadonlyArray<PublishedKey>
}>() {}

/** The PASERK k4.secret of an Ed25519 key: the 32-byte seed followed by the 32-byte public key. */
const paserkPair = (seed: Buffer): { secret: string; public: string } => {
  const privateKey = createPrivateKey({
    key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]),
    format: "der",
    type: "pkcs8"
  })
  const x = Buffer.from(createPublicKey(privateKey).export({ format: "jwk" }).x!, "base64url")
  return { secret: `k4.secret.${Buffer.concat([seed, x]).toString("base64url")}`, public: `k4.public.${x.toString("base64url")}` }
}

/**
 * A fresh Ed25519 key pair as PASERK strings (`iam generate-key`, and the embedded default's key file). An Ed25519
 * private key is 32 random bytes (RFC 8032's seed), so they come from SecureRandom like every other secret.
 */
export const generatePaserk: Effect.Effect<{ secret: string; public: string }, never, SecureRandom> = Effect.map(
  Effect.flatMap(SecureRandom, (random) => random.bytes(32)),
  paserkPair
)

/**
 * Reads a configured key. A k4.secret whose second half is not the public key of its first half is refused:
 * it would sign tokens that its own published key does not verify.
 */
export const parseSigningKey = (raw: string): Either<{ secret: string; public: string }> => {
  try {
    if (raw.startsWith("k4.secret.")) {
      const bytes = Buffer.from(raw.slice("k4.secret.".length), "base64url")
      if (bytes.length !== 64) return { error: "a k4.secret key is 64 bytes" }
      const pair = paserkPair(bytes.subarray(0, 32))
      return pair.secret === raw ? { ok: pair } : { error: "the k4.secret key's public half does not match its seed" }
    }
    const key = createPrivateKey(raw.replaceAll("\\n", "\n"))
    if (key.asymmetricKeyType !== "ed25519") return { error: "the PEM key is not an Ed25519 key" }
    return { ok: paserkPair(Buffer.from(key.export({ format: "jwk" }).d!, "base64url")) }
  } catch {
    return { error: "the key could not be read" }
  }
}
type Either<A> = { readonly ok: A; readonly error?: undefined } | { readonly ok?: undefined; readonly error: string }

/** A stable id for a key that was given none: the start of the SHA-256 of its PASERK k4.public. */
export const defaultKeyId = (paserkPublic: string): string =>
  createHash("sha256").update(paserkPublic).digest("base64url").slice(0, 16)

const KEY_FILE = "iam-paseto-key"

/** The embedded default's signing key, generated on first start and kept (0600) in the data directory. */
export const embeddedSigningKey = (dataDir: string): Effect.Effect<string, IamStartupError, SecureRandom> => {
  const path = join(dataDir, KEY_FILE)
  const unkept = () => new IamStartupError({ message: `could not keep the IAM signing key in ${dataDir}` })
  return Effect.gen(function*() {
    const existing = yield* Effect.try({
      try: () => {
        try {
          return readFileSync(path, "utf8").trim()
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
          return ""
        }
      },
      catch: unkept
    })
    if (existing !== "") return existing
    const { secret } = yield* generatePaserk
    yield* Effect.try({
      try: () => {
        mkdirSync(dataDir, { recursive: true, mode: 0o700 })
        writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: "wx" })
      },
      catch: unkept
    })
    return secret
  })
}

export const IamKeysLive: Layer.Layer<IamKeys, IamStartupError, PlatformConfig | IamConfig | SecureRandom> = Layer.effect(
  IamKeys,
  Effect.gen(function*() {
    const iam = yield* IamConfig
    const { dataDir } = yield* PlatformConfig
    const raw = yield* Option.match(iam.signingKey, {
      onSome: (key) => Effect.succeed(Redacted.value(key)),
      onNone: () => embeddedSigningKey(dataDir)
    })
    const parsed = parseSigningKey(raw)
    if (parsed.ok === undefined) {
      return yield* new IamStartupError({ message: `AUTH_IAM_PASETO_SECRET_KEY: ${parsed.error}` })
    }
    const kid = Option.getOrElse(iam.keyId, () => defaultKeyId(parsed.ok.public))
    const imported = yield* Effect.tryPromise({
      try: async () => ({
        secret: await v4.ImportSecretKey(parsed.ok.secret as `k4.secret.${string}`),
        current: await v4.ImportPublicKey(parsed.ok.public as `k4.public.${string}`),
        previous: await Promise.all(iam.previousPublicKeys.map(async (k) =>
          [k.kid, await v4.ImportPublicKey(k.paserk as `k4.public.${string}`)] as const
        ))
      }),
      catch: () => new IamStartupError({ message: "the IAM keys could not be imported" })
    })
    const published: Array<PublishedKey> = [
      { kid, version: "v4", purpose: "public", paserk: parsed.ok.public },
      ...iam.previousPublicKeys.filter((k) => k.kid !== kid).map((k): PublishedKey => ({
        kid: k.kid,
        version: "v4",
        purpose: "public",
        paserk: k.paserk
      }))
    ]
    return {
      signing: { kid, key: imported.secret },
      verifying: new Map([...imported.previous.filter(([k]) => k !== kid), [kid, imported.current]]),
      published
    }
  })
)
