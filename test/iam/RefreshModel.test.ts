import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, FastCheck, Layer, Runtime, TestClock } from "effect"
import { type AppConfig, configLayer } from "../../src/config/AppConfig.js"
import { RolesRepo } from "../../src/iam/store/RolesRepo.js"
import { type Account, Accounts } from "../../src/iam/accounts/Accounts.js"
import { AccountsRepo } from "../../src/iam/store/AccountsRepo.js"
import { LoginThrottle } from "../../src/iam/accounts/LoginThrottle.js"
import { LoginThrottleRepo } from "../../src/iam/store/LoginThrottleRepo.js"
import type { IamCode } from "../../src/iam/domain/IamError.js"
import { IamSql } from "../../src/iam/IamSql.js"
import { IamKeysLive } from "../../src/iam/tokens/IamKeys.js"
import { IamSessions } from "../../src/iam/tokens/IamSessions.js"
import { PasetoTokens } from "../../src/iam/tokens/PasetoTokens.js"
import { Revocations } from "../../src/iam/tokens/Revocations.js"
import { RevocationsRepo } from "../../src/iam/store/RevocationsRepo.js"
import { TokenFamiliesRepo } from "../../src/iam/store/TokenFamiliesRepo.js"
import { PasswordHasherTest } from "../../src/platform/PasswordHasher.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"
import { Transactions } from "../../src/platform/sql/Transactions.js"
import { testConfig } from "../support/TestServer.js"
import { iamTestEnv } from "./support/IamTestServer.js"

/*
 * Model-based test of IAM's sessions (docs/iam.md: refresh token, reuse interval, a session's end, logout,
 * ValidateToken). Random command sequences run against a small reference model written from those rules and
 * against IamSessions over the in-memory repos, which Repos.test.ts holds to the SQL ones: no database. After every
 * command the two must agree on the outcome, on every refresh token's row, and on what ValidateToken says of every
 * access token handed out. Time is the test's (TestClock), moved onto and around every boundary.
 */

const ACCESS_TTL = 10_000
const REFRESH_TTL = 60_000
const START = Date.UTC(2030, 0, 1)

// ---------------------------------------------------------------------------------------------------------------
// The reference model

interface ModelRefresh {
  readonly id: number
  readonly family: number
  readonly parent: number | null
  readonly issuedAt: number
  readonly expiresAt: number
  spentAt: number | null
}

interface ModelFamily {
  readonly id: number
  readonly user: number
  /** The session's fixed end, or null. */
  readonly end: number | null
  revokedAt: number | null
}

interface ModelAccess {
  readonly id: number
  readonly family: number
  readonly user: number
  readonly expiresAt: number
  loggedOut: boolean
}

type Outcome =
  | { readonly _tag: "Issued"; readonly refresh: number; readonly fresh: boolean; readonly access: number }
  | { readonly _tag: "Refused"; readonly code: IamCode; readonly message: string }
  | { readonly _tag: "Done" }

type Validity = "valid" | "expired" | "revoked"

const EXPIRED = "token has expired"
const REVOKED = "token has been revoked"
const REUSED = "refresh token was already used; the session has been revoked"
const refused = (message: string, code: IamCode = "unauthenticated"): Outcome => ({ _tag: "Refused", code, message })

/**
 * Sign-ins are families of refresh tokens (ids are issue order). The rules, from docs/iam.md:
 * - a token is expired once the clock is past its exp; a refresh token also at its very exp, unless it was spent;
 * - a token of a revoked family is refused as revoked;
 * - an unspent token is spent and a child issued in its family, with a full refresh TTL but never past the session's end;
 * - a spent token presented again within the reuse interval, while its child is still the current token, gets that
 *   same child (refused if the child has expired); any other reuse revokes the family;
 * - an access token lives ACCESS_TTL, never past the session's end; logout revokes it, its family, the presented
 *   refresh token's family (the caller's own, or INVALID_ARGUMENT), and with all_sessions every open family of the user.
 */
class Model {
  readonly refreshes: Array<ModelRefresh> = []
  readonly families: Array<ModelFamily> = []
  readonly accesses: Array<ModelAccess> = []

  constructor(readonly intervalMs: number, public now: number) {}

  signIn(user: number, ttlMs: number | undefined): Outcome {
    const family: ModelFamily = { id: this.families.length, user, end: ttlMs === undefined ? null : this.now + Math.min(ttlMs, REFRESH_TTL), revokedAt: null }
    this.families.push(family)
    return { _tag: "Issued", refresh: this.issueRefresh(family, null), fresh: true, access: this.issueAccess(family) }
  }

  refresh(id: number): Outcome {
    const token = this.refreshes[id]!
    const family = this.families[token.family]!
    if (this.now > token.expiresAt) return refused(EXPIRED)
    if (family.revokedAt !== null) return refused(REVOKED)
    if (token.spentAt !== null) {
      const child = this.refreshes.find((t) => t.parent === token.id)!
      const forgiven = this.intervalMs > 0 && this.now - token.spentAt <= this.intervalMs && child.spentAt === null
      if (!forgiven) {
        family.revokedAt = this.now
        return refused(REUSED)
      }
      if (this.now >= child.expiresAt) return refused(EXPIRED)
      return { _tag: "Issued", refresh: child.id, fresh: false, access: this.issueAccess(family) }
    }
    if (this.now >= token.expiresAt) return refused(EXPIRED)
    token.spentAt = this.now
    return { _tag: "Issued", refresh: this.issueRefresh(family, token.id), fresh: true, access: this.issueAccess(family) }
  }

  logout(accessId: number, refreshId: number | undefined, allSessions: boolean): Outcome {
    const access = this.accesses[accessId]!
    if (this.now > access.expiresAt) return refused(EXPIRED)
    const named = [access.family]
    if (refreshId !== undefined) {
      const other = this.refreshes[refreshId]!
      // An expired refresh token is ignored; a live one must be the caller's.
      if (this.now <= other.expiresAt) {
        if (this.families[other.family]!.user !== access.user) {
          return refused("refresh_token does not belong to the caller", "invalid_argument")
        }
        named.push(other.family)
      }
    }
    const open = allSessions
      ? this.families.filter((f) =>
        f.user === access.user && f.revokedAt === null && this.refreshes.some((t) => t.family === f.id && t.expiresAt > this.now)
      ).map((f) => f.id)
      : []
    access.loggedOut = true
    for (const id of [...named, ...open]) {
      const family = this.families[id]!
      if (family.revokedAt === null) family.revokedAt = this.now
    }
    return { _tag: "Done" }
  }

  validity(accessId: number): Validity {
    const access = this.accesses[accessId]!
    if (this.now > access.expiresAt) return "expired"
    return access.loggedOut || this.families[access.family]!.revokedAt !== null ? "revoked" : "valid"
  }

  private issueRefresh(family: ModelFamily, parent: number | null): number {
    const id = this.refreshes.length
    this.refreshes.push({ id, family: family.id, parent, issuedAt: this.now, expiresAt: this.until(REFRESH_TTL, family), spentAt: null })
    return id
  }

  private issueAccess(family: ModelFamily): number {
    const id = this.accesses.length
    this.accesses.push({ id, family: family.id, user: family.user, expiresAt: this.until(ACCESS_TTL, family), loggedOut: false })
    return id
  }

  private until(ttl: number, family: ModelFamily): number {
    return Math.min(this.now + ttl, family.end ?? Infinity)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Commands

type Command =
  | { readonly _tag: "SignIn"; readonly user: number; readonly ttlMs: number | undefined }
  /** Refreshes a refresh token handed out earlier, counted back from the most recent one (0 = the latest). */
  | { readonly _tag: "Refresh"; readonly back: number }
  /** Logs out with an access token counted back from the latest, with the user's own latest refresh token or another's. */
  | { readonly _tag: "Logout"; readonly back: number; readonly refresh: "none" | "own" | "other"; readonly all: boolean }
  | { readonly _tag: "Advance"; readonly ms: number }

const signIn = FastCheck.record({
  user: FastCheck.integer({ min: 0, max: 1 }),
  // No end, one inside the refresh TTL, or one past it (capped to it).
  ttlMs: FastCheck.constantFrom(undefined, undefined, 15_000, 30_000, 120_000)
}).map(({ ttlMs, user }): Command => ({ _tag: "SignIn", user, ttlMs }))

const command = (intervalMs: number): FastCheck.Arbitrary<Command> =>
  FastCheck.oneof(
    { arbitrary: signIn, weight: 2 },
    {
      // Mostly the latest token or its parent (rotation, lost responses, racing clients), sometimes anything older.
      arbitrary: FastCheck.oneof({ arbitrary: FastCheck.nat(1), weight: 3 }, { arbitrary: FastCheck.nat(12), weight: 1 })
        .map((back): Command => ({ _tag: "Refresh", back })),
      weight: 6
    },
    {
      arbitrary: FastCheck.record({
        back: FastCheck.nat(4),
        refresh: FastCheck.constantFrom<Array<"none" | "own" | "other">>("none", "own", "other"),
        all: FastCheck.boolean()
      }).map(({ all, back, refresh }): Command => ({ _tag: "Logout", back, refresh, all })),
      weight: 1
    },
    {
      // Onto, just before and just past the reuse interval and the access TTL as often as anywhere in 0..70 s.
      arbitrary: FastCheck.oneof(
        {
          arbitrary: FastCheck.constantFrom(0, 1, intervalMs - 1, intervalMs, intervalMs + 1, ACCESS_TTL - 1, ACCESS_TTL, ACCESS_TTL + 1)
            .map((ms) => Math.max(0, ms)),
          weight: 2
        },
        { arbitrary: FastCheck.integer({ min: 0, max: 70_000 }), weight: 1 }
      ).map((ms): Command => ({ _tag: "Advance", ms })),
      weight: 3
    }
  )

const commands = (intervalMs: number) =>
  FastCheck.tuple(signIn, FastCheck.array(command(intervalMs), { maxLength: 24, size: "max" })).map(([first, rest]) => [first, ...rest])

const first: Command = { _tag: "SignIn", user: 0, ttlMs: undefined }
const refresh = (back: number): Command => ({ _tag: "Refresh", back })
const advance = (ms: number): Command => ({ _tag: "Advance", ms })

/** Always run first (with a 10 s interval), so both sides of each boundary, the session's end and logout are hit. */
const examples: Array<[Array<Command>]> = [
  // The spent parent exactly at the interval: the same child again; then the child rotates as usual.
  [[first, refresh(0), advance(10_000), refresh(1), refresh(0)]],
  // One millisecond past it: reuse, the family is revoked, the child with it.
  [[first, refresh(0), advance(10_001), refresh(1), refresh(0)]],
  // An older ancestor within the interval: its child is no longer current, so reuse.
  [[first, refresh(0), refresh(0), refresh(2), refresh(0)]],
  // A session with an end: refreshed before it, refused at it; its access tokens never outlive it.
  [[{ _tag: "SignIn", user: 0, ttlMs: 15_000 }, advance(9_999), refresh(0), advance(5_001), refresh(0)]],
  // Logout of all sessions leaves the other user's; a refresh token of the other user is refused.
  [[first, { _tag: "SignIn", user: 1, ttlMs: undefined }, first, { _tag: "Logout", back: 0, refresh: "other", all: false },
    { _tag: "Logout", back: 0, refresh: "none", all: true }, refresh(0), refresh(1), refresh(2)]],
  // A logged-out access token at its very last valid moment.
  [[first, { _tag: "Logout", back: 0, refresh: "none", all: false }, advance(ACCESS_TTL)]]
]

// ---------------------------------------------------------------------------------------------------------------
// Running a sequence on both

/** The claims of a v4.public token: its payload is the message before the 64-byte signature. */
const claimsOf = (token: string): { readonly jti: string; readonly fam: string; readonly exp: string } =>
  JSON.parse(Buffer.from(token.split(".")[2]!, "base64url").subarray(0, -64).toString("utf8"))

const configWith = (intervalMs: number): AppConfig =>
  testConfig(iamTestEnv({
    AUTH_IAM_ACCESS_TOKEN_TTL: `${ACCESS_TTL / 1000}s`,
    AUTH_IAM_REFRESH_TOKEN_TTL: `${REFRESH_TTL / 1000}s`,
    AUTH_IAM_REFRESH_TOKEN_REUSE_INTERVAL: `${intervalMs / 1000}s`
  }))

/** IamSessions and what it stands on, all in memory: fresh rows, a fresh revocation cache, deterministic ids. */
const SessionsOverMemory = (config: AppConfig) =>
  IamSessions.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(Accounts.layer, PasetoTokens.layer, Revocations.layer)),
    Layer.provideMerge(LoginThrottle.layer),
    Layer.provideMerge(IamKeysLive.pipe(Layer.orDie)),
    Layer.provideMerge(Layer.mergeAll(
      RolesRepo.Test.pipe(Layer.provideMerge(AccountsRepo.Test)),
      LoginThrottleRepo.Test,
      TokenFamiliesRepo.Test,
      RevocationsRepo.Test
    )),
    Layer.provideMerge(Layer.mergeAll(Transactions.Test, IamSql.Test, SecureRandom.Test, PasswordHasherTest, configLayer(config)))
  )

const runSequence = (intervalMs: number, cmds: ReadonlyArray<Command>) =>
  Effect.gen(function*() {
    const sessions = yield* IamSessions
    const families = yield* TokenFamiliesRepo
    const repo = yield* AccountsRepo
    const accounts = yield* Accounts
    const model = new Model(intervalMs, yield* TestClock.currentTimeMillis)

    const users: Array<Account> = []
    for (const name of ["ann", "bob"]) {
      const row = yield* repo.insert({ username: name, email: `${name}@example.com`, passwordHash: "$2a$04$not-a-real-hash" })
      users.push((yield* accounts.find(row.id))!)
    }
    const refreshTokens: Array<string> = []
    const accessTokens: Array<string> = []
    const familyIds: Array<string> = []
    const trace: Array<string> = []
    const where = () => `after ${trace.join(" → ")}`
    const jtiOf = (id: number) => claimsOf(refreshTokens[id]!).jti

    const compareState = Effect.gen(function*() {
      for (const token of model.refreshes) {
        const family = model.families[token.family]!
        const locked = yield* families.lockForRefresh(jtiOf(token.id))
        expect(locked?.token, `row of refresh #${token.id} ${where()}`).toEqual({
          jti: jtiOf(token.id),
          family: familyIds[token.family],
          userId: users[family.user]!.id,
          parent: token.parent === null ? null : jtiOf(token.parent),
          issuedAt: new Date(token.issuedAt),
          expiresAt: new Date(token.expiresAt),
          sessionEndsAt: family.end === null ? null : new Date(family.end),
          spentAt: token.spentAt === null ? null : new Date(token.spentAt),
          revokedAt: family.revokedAt === null ? null : new Date(family.revokedAt)
        })
        const child = model.refreshes.find((t) => t.parent === token.id)
        expect(locked?.child?.jti, `child of refresh #${token.id} ${where()}`).toBe(child === undefined ? undefined : jtiOf(child.id))
      }
      for (const access of model.accesses) {
        const result = yield* sessions.validate(accessTokens[access.id]!)
        expect(result.valid ? "valid" : result.reason, `access #${access.id} ${where()}`).toBe(model.validity(access.id))
      }
    })

    for (const cmd of cmds) {
      switch (cmd._tag) {
        case "SignIn": {
          const expected = model.signIn(cmd.user, cmd.ttlMs)
          const issued = yield* sessions.issue(users[cmd.user]!, cmd.ttlMs === undefined ? undefined : Duration.millis(cmd.ttlMs))
          if (expected._tag !== "Issued") throw new Error("a sign-in is always issued")
          expect(refreshTokens, `a sign-in reuses a token ${where()}`).not.toContain(issued.refreshToken)
          refreshTokens[expected.refresh] = issued.refreshToken
          accessTokens[expected.access] = issued.accessToken
          familyIds[model.refreshes[expected.refresh]!.family] = claimsOf(issued.refreshToken).fam
          trace.push(`SignIn(u${cmd.user}${cmd.ttlMs === undefined ? "" : `, ${cmd.ttlMs}ms`}) = #${expected.refresh}`)
          break
        }
        case "Refresh": {
          const id = model.refreshes.length - 1 - (cmd.back % model.refreshes.length)
          const expected = model.refresh(id)
          const actual = yield* Effect.either(sessions.refresh(refreshTokens[id]!))
          trace.push(`Refresh(#${id}) = ${expected._tag === "Issued" ? `#${expected.refresh}` : expected._tag === "Refused" ? expected.message : ""}`)
          if (expected._tag === "Refused") {
            expect(Either.isLeft(actual) ? { code: actual.left.code, message: actual.left.message } : "issued", `outcome ${where()}`)
              .toEqual({ code: expected.code, message: expected.message })
            break
          }
          if (expected._tag !== "Issued") throw new Error("a refresh is issued or refused")
          expect(Either.isRight(actual) ? "issued" : actual.left.message, `outcome ${where()}`).toBe("issued")
          const issued = Either.getOrThrow(actual)
          if (expected.fresh) {
            expect(refreshTokens, `a rotation handed out an old token ${where()}`).not.toContain(issued.refreshToken)
            refreshTokens[expected.refresh] = issued.refreshToken
          } else {
            // The reuse interval hands out exactly the child issued before, not a new one.
            expect(issued.refreshToken, `returned child ${where()}`).toBe(refreshTokens[expected.refresh])
          }
          expect(issued.refreshExpiresAt.getTime(), `refresh expiry ${where()}`).toBe(model.refreshes[expected.refresh]!.expiresAt)
          expect(issued.expiresAt.getTime(), `access expiry ${where()}`).toBe(model.accesses[expected.access]!.expiresAt)
          accessTokens[expected.access] = issued.accessToken
          break
        }
        case "Logout": {
          const id = model.accesses.length - 1 - (cmd.back % model.accesses.length)
          const user = model.accesses[id]!.user
          const of = (u: number) => [...model.refreshes].reverse().find((t) => model.families[t.family]!.user === u)?.id
          const refreshId = cmd.refresh === "none" ? undefined : of(cmd.refresh === "own" ? user : 1 - user)
          const expected = model.logout(id, refreshId, cmd.all)
          const actual = yield* Effect.either(sessions.logout({
            accessToken: accessTokens[id],
            refreshToken: refreshId === undefined ? "" : refreshTokens[refreshId]!,
            allSessions: cmd.all
          }))
          trace.push(`Logout(access #${id}, ${refreshId === undefined ? "-" : `#${refreshId}`}${cmd.all ? ", all" : ""})`)
          expect(Either.isLeft(actual) ? { code: actual.left.code, message: actual.left.message } : { _tag: "Done" }, `outcome ${where()}`)
            .toEqual(expected._tag === "Refused" ? { code: expected.code, message: expected.message } : { _tag: "Done" })
          break
        }
        case "Advance":
          model.now += cmd.ms
          yield* TestClock.adjust(cmd.ms)
          trace.push(`+${cmd.ms}ms`)
          break
      }
      yield* compareState
    }
  }).pipe(Effect.provide(SessionsOverMemory(configWith(intervalMs))))

// ---------------------------------------------------------------------------------------------------------------

describe("IAM refresh rotation against a reference model, over the in-memory repos", () => {
  for (const intervalMs of [10_000, 0]) {
    it.effect(`IamSessions and the model agree (reuse interval ${intervalMs / 1000}s)`, () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(START)
        const runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(commands(intervalMs), (cmds) => Runtime.runPromise(runtime)(runSequence(intervalMs, cmds))),
            { numRuns: 60, ...(intervalMs === 10_000 ? { examples } : {}) }
          )
        )
      }), 120_000)
  }
})
