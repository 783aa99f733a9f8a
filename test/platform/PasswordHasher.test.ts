import { describe, expect, it, layer } from "@effect/vitest"
import * as NodeRsBcrypt from "@node-rs/bcrypt"
import { Effect, FastCheck, Fiber, Redacted } from "effect"
import { bcryptCost, needsRehash } from "../../src/domain/BcryptCost.js"
import { type Bcrypt, BcryptPasswordHasher, bcryptPermits, PasswordHasher, PasswordHasherTest } from "../../src/platform/PasswordHasher.js"

const secret = (password: string): Redacted.Redacted<string> => Redacted.make(password)

// Hashes made by other bcrypt implementations. The cost-5 ones are the OpenBSD / openwall
// crypt_blowfish test vectors (2b and 2y are the same computation under another label); the cost-10
// ones are what GoTrue stores, generated once and kept as literals.
const foreignHashes: ReadonlyArray<readonly [label: string, password: string, hash: string]> = [
  ["openwall $2a$", "U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"],
  ["openwall $2a$ (2)", "U*U*U", "$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a"],
  ["openwall $2b$", "U*U", "$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"],
  ["openwall $2y$", "U*U", "$2y$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"],
  ["GoTrue-style $2a$10$", "gatehouse-known-password", "$2a$10$P8HHRdca9RviPWlqOvTm7eCPtnaHYerjNN4wTCQG.9japvUeK9qa6"],
  ["$2b$10$", "gatehouse-known-password", "$2b$10$VssUB0G1kNPD66TX5clPIertsDKe1nnYJINgeRW5Fm15v3.Q54iaC"]
]

const malformedHashes: ReadonlyArray<string> = [
  "",
  "not a hash",
  "$2a$10$short",
  `$2a$99$${"a".repeat(53)}`,
  "$2a$10$P8HHRdca9RviPWlqOvTm7eCPtnaHYerjNN4wTCQG.9japvUeK9qa", // one character short
  "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
]

/**
 * Real bcrypt with the in-flight calls counted around each native call. While `hold` is in force,
 * calls wait before reaching bcrypt, so the test decides when jobs finish instead of timing them.
 */
const instrumentedBcrypt = () => {
  const stats = { calls: 0, inFlight: 0, maxInFlight: 0 }
  let gate: Promise<void> = Promise.resolve()
  let release = (): void => undefined
  const counted = async <A>(run: () => Promise<A>): Promise<A> => {
    stats.calls++
    stats.inFlight++
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight)
    try {
      await gate
      return await run()
    } finally {
      stats.inFlight--
    }
  }
  const bcrypt: Bcrypt = {
    hash: (password, options) => counted(() => NodeRsBcrypt.hash(password, options)),
    verify: (password, hash) => counted(() => NodeRsBcrypt.verify(password, hash))
  }
  const hold = (): void => {
    gate = new Promise((resolve) => {
      release = resolve
    })
  }
  return { bcrypt, stats, hold, release: () => release() }
}

/** Yields until `done` holds; bounded so a broken invariant fails the assertion that follows. */
const settle = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000 && !done(); i++) yield* Effect.yieldNow()
  })

describe("PasswordHasher", () => {
  layer(BcryptPasswordHasher())("BcryptPasswordHasher (defaults)", (it) => {
    it.effect("stores $2a$ hashes at cost 10, like GoTrue", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        const hash = yield* hasher.hash(secret("correct horse battery staple"))
        expect(hash).toMatch(/^\$2a\$10\$[./A-Za-z0-9]{53}$/)
        expect(NodeRsBcrypt.parseOptions(hash)).toEqual({ version: "2a", cost: 10 })
        expect(yield* hasher.verify(secret("correct horse battery staple"), hash)).toBe(true)
        expect(yield* hasher.verify(secret("correct horse battery stapler"), hash)).toBe(false)
      }))

    it.effect("salts every hash", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        const [a, b] = yield* Effect.all([hasher.hash(secret("same")), hasher.hash(secret("same"))])
        expect(a).not.toBe(b)
      }))
  })

  layer(PasswordHasherTest)("PasswordHasherTest", (it) => {
    it.effect("round-trips at the minimum cost", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        const hash = yield* hasher.hash(secret("hunter22"))
        expect(NodeRsBcrypt.parseOptions(hash)).toEqual({ version: "2a", cost: 4 })
        expect(yield* hasher.verify(secret("hunter22"), hash)).toBe(true)
        expect(yield* hasher.verify(secret("hunter23"), hash)).toBe(false)
      }))

    it.effect.each(foreignHashes)("verifies a foreign hash: %s", ([, password, hash]) =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        expect(yield* hasher.verify(secret(password), hash)).toBe(true)
        expect(yield* hasher.verify(secret(`${password}!`), hash)).toBe(false)
      }))

    it.effect("keeps bcrypt's 72-byte truncation, as stored hashes depend on it", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        const openwall = "$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui"
        const first72 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        expect(yield* hasher.verify(secret(`${first72}chars after 72 are ignored`), openwall)).toBe(true)
        expect(yield* hasher.verify(secret(`${first72}anything else`), openwall)).toBe(true)
      }))

    it.effect.each(malformedHashes)("a malformed hash verifies as false: %j", (hash) =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        expect(yield* hasher.verify(secret("U*U"), hash)).toBe(false)
        expect(yield* hasher.verifyOrBurn(secret("U*U"), hash)).toBe(false)
      }))

    it.effect("verifyOrBurn checks a real hash", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        const hash = yield* hasher.hash(secret("hunter22"))
        expect(yield* hasher.verifyOrBurn(secret("hunter22"), hash)).toBe(true)
        expect(yield* hasher.verifyOrBurn(secret("hunter23"), hash)).toBe(false)
      }))

    it.effect("verifyOrBurn without a hash is false, even for the dummy's own password", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        expect(yield* hasher.verifyOrBurn(secret("hunter22"), undefined)).toBe(false)
        expect(yield* hasher.verifyOrBurn(secret("gatehouse: no such account"), undefined)).toBe(false)
      }))
  })

  it.effect("verifyOrBurn without a hash still does one bcrypt verification", () =>
    Effect.gen(function*() {
      const native = instrumentedBcrypt()
      const hasher = yield* PasswordHasher.pipe(Effect.provide(BcryptPasswordHasher({ cost: 4 }, native.bcrypt)))
      const before = native.stats.calls
      expect(yield* hasher.verifyOrBurn(secret("hunter22"), undefined)).toBe(false)
      expect(native.stats.calls).toBe(before + 1)
    }))

  it.effect.each([1, 3])("runs at most %i bcrypt jobs at once", (cap) =>
    Effect.gen(function*() {
      const native = instrumentedBcrypt()
      const hasher = yield* PasswordHasher.pipe(
        Effect.provide(BcryptPasswordHasher({ cost: 4, concurrency: cap }, native.bcrypt))
      )
      const hash = yield* hasher.hash(secret("hunter22"))
      const callsBefore = native.stats.calls
      native.hold()
      const fiber = yield* Effect.fork(
        Effect.all(Array.from({ length: 6 }, () => hasher.verify(secret("hunter22"), hash)), {
          concurrency: "unbounded"
        })
      )
      yield* settle(() => native.stats.inFlight >= cap)
      yield* settle(() => false)
      // Six callers, but only `cap` reached bcrypt; the rest wait for a permit.
      expect(native.stats.inFlight).toBe(cap)
      expect(native.stats.calls - callsBefore).toBe(cap)
      native.release()
      expect(yield* Fiber.join(fiber)).toEqual([true, true, true, true, true, true])
      expect(native.stats.calls - callsBefore).toBe(6)
      expect(native.stats.maxInFlight).toBe(cap)
    }))

  it.effect("a caller interrupted mid-hash keeps its permit until bcrypt finishes", () =>
    Effect.gen(function*() {
      const native = instrumentedBcrypt()
      const hasher = yield* PasswordHasher.pipe(
        Effect.provide(BcryptPasswordHasher({ cost: 4, concurrency: 1 }, native.bcrypt))
      )
      native.hold()
      const first = yield* Effect.fork(hasher.hash(secret("one")))
      yield* settle(() => native.stats.inFlight === 1)
      const interruption = yield* Effect.fork(Fiber.interrupt(first))
      const second = yield* Effect.fork(hasher.hash(secret("two")))
      yield* settle(() => false)
      expect(native.stats.inFlight).toBe(1)
      native.release()
      yield* Fiber.join(interruption)
      yield* Fiber.join(second)
      expect(native.stats.maxInFlight).toBe(1)
    }))
})

describe("bcryptPermits", () => {
  it.prop("the processes together hold at least as many permits as cores, each at least one, never a whole extra core's worth",
    [FastCheck.integer({ min: 1, max: 256 }), FastCheck.integer({ min: 1, max: 256 })], ([cores, processes]) => {
      const permits = bcryptPermits(cores, processes)
      expect(permits).toBeGreaterThanOrEqual(1)
      expect(permits * processes).toBeGreaterThanOrEqual(cores)
      expect((permits - 1) * processes).toBeLessThan(cores)
    })

  it("two workers on two cores get one permit each; one process gets a permit per core", () => {
    expect([bcryptPermits(2, 2), bcryptPermits(2, 1), bcryptPermits(8, 3), bcryptPermits(0, 4)]).toEqual([1, 2, 3, 1])
  })
})

describe("needsRehash", () => {
  it("reads a bcrypt hash's cost from any of its labels, and nothing from anything else", () => {
    expect(["$2a$13$x", "$2b$04$x", "$2y$10$x", "$2x$31$x"].map(bcryptCost)).toEqual([13, 4, 10, 31])
    expect(["", "$argon2id$v=19$m=65536", "$fbscrypt$v=1", "$2a$1$x", "plain"].map(bcryptCost)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined
    ])
  })

  it.prop("a bcrypt hash needs a rehash exactly when its cost is not the hasher's",
    [FastCheck.integer({ min: 4, max: 31 }), FastCheck.integer({ min: 4, max: 31 }), FastCheck.constantFrom("a", "b", "y")],
    ([found, configured, label]) => {
      expect(needsRehash(`$2${label}$${String(found).padStart(2, "0")}$salt`, configured)).toBe(found !== configured)
    })

  it("leaves a hash that is not bcrypt's alone", () => {
    expect(needsRehash("$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", 10)).toBe(false)
  })

  layer(PasswordHasherTest)((it) => {
    it.effect("the hasher judges by its own cost (4 here): GoTrue's cost-10 hash is stored again, its own is not", () =>
      Effect.gen(function*() {
        const hasher = yield* PasswordHasher
        expect(hasher.needsRehash(yield* hasher.hash(secret("pw")))).toBe(false)
        expect(hasher.needsRehash("$2a$10$abcdefghijklmnopqrstuu5Wf1bC8o4rT1c5ZyZ2mG7V0o9i1Z1vK")).toBe(true)
      }))
  })
})
