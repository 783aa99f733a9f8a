/**
 * Password hashing with bcrypt, interchangeable with GoTrue's `encrypted_password` column.
 *
 * bcrypt reads at most 72 bytes of a password and ignores the rest. GoTrue's password policy refuses
 * longer passwords before they reach this port, and verification must keep that truncation so hashes
 * imported from GoTrue still match.
 */
import * as NodeRsBcrypt from "@node-rs/bcrypt"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { needsRehash } from "../domain/BcryptCost.js"
import { traced } from "./Traced.js"

export class PasswordHasher extends Context.Tag("platform/PasswordHasher")<
  PasswordHasher,
  {
    readonly hash: (password: Redacted.Redacted<string>) => Effect.Effect<string>
    /** Accepts `$2a$`, `$2b$` and `$2y$` hashes; a malformed hash is `false`, not a failure. */
    readonly verify: (password: Redacted.Redacted<string>, hash: string) => Effect.Effect<boolean>
    /**
     * `verify` when the account exists; otherwise the same bcrypt work against a dummy hash and
     * `false`, so the response time of a login does not tell whether the account exists.
     */
    readonly verifyOrBurn: (password: Redacted.Redacted<string>, hash: string | undefined) => Effect.Effect<boolean>
    /**
     * Whether a hash that just verified should be stored again at this hasher's cost: a bcrypt hash of any other cost
     * (see needsRehash).
     */
    readonly needsRehash: (hash: string) => boolean
  }
>() {}

/** The part of @node-rs/bcrypt this port uses; a seam for instrumenting the native calls in tests. */
export interface Bcrypt {
  readonly hash: (password: string, options: { readonly cost: number; readonly version: "2a" }) => Promise<string>
  readonly verify: (password: string, hash: string) => Promise<boolean>
}

export interface BcryptOptions {
  /** GoTrue's cost; 4..31. Default 10. */
  readonly cost?: number
  /** Concurrent bcrypt jobs. Default 4, libuv's default threadpool size; production passes bcryptPermits. */
  readonly concurrency?: number
}

const make = Effect.fnUntraced(function*(
  bcrypt: Bcrypt,
  cost: number,
  limit: <A>(self: Effect.Effect<A>) => Effect.Effect<A>
) {
  // `2a`, not the library's default `2b`, so our hashes look exactly like GoTrue's (Go's
  // x/crypto/bcrypt writes `2a`). `2b` only marks a fix to an OpenBSD length bug that
  // neither Go's nor this implementation ever had, so both labels verify the same.
  const hash = (password: string): Effect.Effect<string> =>
    limit(Effect.promise(() => bcrypt.hash(password, { cost, version: "2a" })))
  const verify = (password: string, encoded: string): Effect.Effect<boolean> =>
    limit(Effect.promise(() => bcrypt.verify(password, encoded)))

  // At the configured cost, so burning takes as long as checking a real hash.
  const dummyHash = yield* hash("gatehouse: no such account")

  return PasswordHasher.of({
    hash: traced("PasswordHasher.hash")((password: Redacted.Redacted<string>) => hash(Redacted.value(password))),
    verify: traced("PasswordHasher.verify")((password: Redacted.Redacted<string>, encoded: string) =>
      verify(Redacted.value(password), encoded)
    ),
    verifyOrBurn: traced("PasswordHasher.verifyOrBurn")(
      (password: Redacted.Redacted<string>, encoded: string | undefined) =>
        encoded === undefined
          ? Effect.as(verify(Redacted.value(password), dummyHash), false)
          : verify(Redacted.value(password), encoded)
    ),
    needsRehash: (encoded: string) => needsRehash(encoded, cost)
  })
})

/**
 * bcrypt on @node-rs/bcrypt, which runs on the libuv threadpool. The semaphore keeps bcrypt from
 * holding every pool thread, where file, DNS and WebCrypto jobs would queue behind a burst of logins.
 * A permit is held until the native job finishes, even if the caller is interrupted, because the job
 * keeps its thread either way.
 */
export const BcryptPasswordHasher = (
  options: BcryptOptions = {},
  bcrypt: Bcrypt = NodeRsBcrypt
): Layer.Layer<PasswordHasher> =>
  Layer.effect(
    PasswordHasher,
    Effect.gen(function*() {
      const concurrency = options.concurrency ?? 4
      // Zero permits would hang every login rather than fail, so refuse it at start-up.
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        return yield* Effect.dieMessage(`bcrypt concurrency must be a positive integer, got ${concurrency}`)
      }
      const semaphore = yield* Effect.makeSemaphore(concurrency)
      return yield* make(bcrypt, options.cost ?? 10, (self) => semaphore.withPermits(1)(Effect.uninterruptible(self)))
    })
  )

/**
 * bcrypt permits per serving process: the machine's cores shared among its processes, at least one each. More jobs
 * at once than cores adds no login throughput (each job is pure CPU) and only takes CPU from every other request:
 * two workers on two cores with four permits each ran eight bcrypt threads beside two event loops.
 */
export const bcryptPermits = (cores: number, processes: number): number =>
  Math.max(1, Math.ceil(Math.max(1, cores) / Math.max(1, processes)))

/** Real bcrypt at the minimum cost: the production code path, fast enough for tests. */
export const PasswordHasherTest: Layer.Layer<PasswordHasher> = Layer.effect(
  PasswordHasher,
  make(NodeRsBcrypt, 4, (self) => self)
)
