import { randomBytes, randomInt, randomUUID } from "node:crypto"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"

/**
 * A random (version 4) UUID, drawn at once, for what runs outside any Effect context and that no test needs to
 * predict: a request's id, the process's telemetry instance id. Everything else asks the SecureRandom port.
 */
export const drawUuid = (): string => randomUUID()

/**
 * Randomness is drawn in this file only (the one exception, the development JWT secret in config/loadConfig.ts, is
 * drawn before any layer exists). Unpredictable values: one-time codes and identifiers a client sees. Codes are secrets, so Live draws from the
 * operating system's CSPRNG (node:crypto), not from Effect's seedable Random. Test is deterministic, so a test
 * can know the code a flow will send.
 */
export class SecureRandom extends Context.Tag("platform/SecureRandom")<SecureRandom, {
  /** A uniformly random, zero-padded numeric code of `length` digits. */
  readonly digits: (length: number) => Effect.Effect<string>
  /** A random (version 4) UUID. */
  readonly uuid: () => Effect.Effect<string>
  /** `count` random bytes: a secret that is sent or kept, never typed (a link token, a cookie's value). */
  readonly bytes: (count: number) => Effect.Effect<Buffer>
}>() {
  static readonly Live: Layer.Layer<SecureRandom> = Layer.succeed(SecureRandom, {
    digits: (length) => Effect.sync(() => Array.from({ length }, () => String(randomInt(10))).join("")),
    uuid: () => Effect.sync(drawUuid),
    bytes: (count) => Effect.sync(() => randomBytes(count))
  })

  /** Each call returns the next value of a counter: codes 000001, 000002, …; UUIDs …0001, …0002, …; bytes of zeros ending in it. */
  static readonly Test: Layer.Layer<SecureRandom> = Layer.effect(
    SecureRandom,
    Effect.map(Ref.make(0), (counter) => {
      const next = Ref.updateAndGet(counter, (n) => n + 1)
      return {
        digits: (length) => Effect.map(next, (n) => String(n % 10 ** length).padStart(length, "0")),
        uuid: () => Effect.map(next, (n) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`),
        bytes: (count) =>
          Effect.map(next, (n) => {
            const buffer = Buffer.alloc(Math.max(count, 4))
            buffer.writeUInt32BE(n, buffer.length - 4)
            return buffer.subarray(buffer.length - count)
          })
      }
    })
  )
}
