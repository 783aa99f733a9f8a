import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Either, FastCheck, Layer, Redacted, Runtime } from "effect"
import { authHousekeepingState, authHousekeepingTasks, AuthHousekeepingTasksLive } from "../../../src/auth/AuthHousekeeping.js"
import { authTables } from "../../../src/auth/AuthTables.js"
import { refreshTokenTasks } from "../../../src/auth/sessions/ExpiredRefreshTokens.js"
import { digestRefreshToken, refreshTokenKey } from "../../../src/auth/sessions/RefreshTokenCodec.js"
import { RefreshTokenSweepRepo } from "../../../src/auth/sessions/RefreshTokenSweepRepo.js"
import { type LogoutScope, Sessions } from "../../../src/auth/sessions/Sessions.js"
import { Users } from "../../../src/auth/users/Users.js"
import { configLayer, type ConfigTags } from "../../../src/config/AppConfig.js"
import { PlatformConfig } from "../../../src/config/PlatformConfig.js"
import { runHousekeeping } from "../../../src/platform/process/Housekeeping.js"
import { qualifiedTables } from "../../../src/platform/sql/Tables.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

/*
 * Model-based test of spec §3. Random command sequences run against a small reference model written from the
 * spec's state table (below) and against the real Sessions service on Postgres; after every command the two must
 * agree on the outcome and on the whole state of every token handed out.
 *
 * Housekeeping (plan §3.4) runs in between as the command Sweep, which the model knows nothing of: every outcome and
 * every session's survival must still be the model's (P1), and a token the model calls revoked may have lost its row
 * only if it is the parent of no live token (P2). At the end every token ever handed out is presented again after a
 * sweep, and each answer must be the model's: refused, except the current token and its parent within the interval,
 * and a reuse ends the session (P3).
 */

const INTERVAL_MS = 10_000
const START = Date.UTC(2030, 0, 1)

// ---------------------------------------------------------------------------------------------------------------
// The reference model

interface Policy {
  readonly rotation: boolean
  readonly intervalMs: number
}

interface ModelToken {
  readonly id: number
  readonly session: number
  readonly parent: number | null
  revoked: boolean
  revokedAt: number | null
}

interface ModelSession {
  readonly id: number
  readonly user: number
  alive: boolean
}

type ModelOutcome =
  | { readonly _tag: "Issued"; readonly token: number; readonly fresh: boolean }
  | { readonly _tag: "Refused"; readonly code: string }

type TokenState =
  | { readonly _tag: "Gone" }
  | { readonly _tag: "Live" }
  | { readonly _tag: "Revoked"; readonly at: number }

/**
 * Sessions own trees of tokens (ids are issue order). The rules, straight from the spec table:
 * - a token whose session was logged out no longer exists: refresh_token_not_found;
 * - a valid token is revoked and a new child is issued;
 * - a revoked token with rotation on: if it is the parent of the session's current (only valid) token and was
 *   revoked at most the interval ago, that current token is handed out again and nothing changes; otherwise
 *   reuse: the session ends (every token descending from it, and the rest of its family, is gone), and
 *   refresh_token_already_used;
 * - a revoked token with rotation off: refresh_token_already_used and nothing changes (the spec table's
 *   forgiveness and reuse rows both require rotation).
 */
class Model {
  now = START
  readonly tokens: Array<ModelToken> = []
  readonly sessions: Array<ModelSession> = []

  constructor(readonly policy: Policy) {}

  signIn(user: number): { readonly session: number; readonly token: number } {
    const session = { id: this.sessions.length, user, alive: true }
    this.sessions.push(session)
    return { session: session.id, token: this.issue(session.id, null) }
  }

  refresh(id: number): ModelOutcome {
    const token = this.tokens[id]!
    if (!this.sessions[token.session]!.alive) return { _tag: "Refused", code: "refresh_token_not_found" }
    if (!token.revoked) {
      this.revoke(token)
      return { _tag: "Issued", token: this.issue(token.session, token.id), fresh: true }
    }
    if (!this.policy.rotation) return { _tag: "Refused", code: "refresh_token_already_used" }
    const current = this.tokens.filter((t) => t.session === token.session && !t.revoked)
    expect(current.length).toBeLessThanOrEqual(1)
    if (current[0]?.parent === token.id && this.now - token.revokedAt! <= this.policy.intervalMs) {
      return { _tag: "Issued", token: current[0].id, fresh: false }
    }
    this.sessions[token.session]!.alive = false
    return { _tag: "Refused", code: "refresh_token_already_used" }
  }

  logout(session: number, scope: LogoutScope): void {
    const user = this.sessions[session]!.user
    for (const s of this.sessions) {
      if (s.user !== user) continue
      if (scope === "global" || (scope === "local" ? s.id === session : s.id !== session)) s.alive = false
    }
  }

  state(id: number): TokenState {
    const token = this.tokens[id]!
    if (!this.sessions[token.session]!.alive) return { _tag: "Gone" }
    return token.revoked ? { _tag: "Revoked", at: token.revokedAt! } : { _tag: "Live" }
  }

  private issue(session: number, parent: number | null): number {
    const id = this.tokens.length
    this.tokens.push({ id, session, parent, revoked: false, revokedAt: null })
    return id
  }

  private revoke(token: ModelToken): void {
    token.revoked = true
    token.revokedAt = this.now
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Commands

type Command =
  | { readonly _tag: "SignIn"; readonly user: number }
  /** Refreshes a token handed out earlier, counted back from the most recent one (0 = the latest). */
  | { readonly _tag: "Refresh"; readonly back: number }
  /** Logs out from a live session, counted back from the most recently started one. */
  | { readonly _tag: "Logout"; readonly back: number; readonly scope: LogoutScope }
  | { readonly _tag: "AdvanceClock"; readonly ms: number }
  /** Every housekeeping task once, at the model's time, with the refresh tokens' margins at 0. */
  | { readonly _tag: "Sweep" }

const signIn = FastCheck.integer({ min: 0, max: 1 }).map((user): Command => ({ _tag: "SignIn", user }))
const command: FastCheck.Arbitrary<Command> = FastCheck.oneof(
  { arbitrary: signIn, weight: 2 },
  {
    // Mostly the latest token or its parent (rotation, lost responses, racing tabs), sometimes anything older.
    arbitrary: FastCheck.oneof({ arbitrary: FastCheck.nat(1), weight: 3 }, { arbitrary: FastCheck.nat(12), weight: 1 })
      .map((back): Command => ({ _tag: "Refresh", back })),
    weight: 6
  },
  {
    arbitrary: FastCheck.record({
      back: FastCheck.nat(4),
      scope: FastCheck.constantFrom<Array<LogoutScope>>("local", "others", "global")
    }).map(({ back, scope }): Command => ({ _tag: "Logout", back, scope })),
    weight: 1
  },
  {
    // Onto, just before and just past the reuse-interval boundary as often as anywhere in 0..3× the interval.
    arbitrary: FastCheck.oneof(
      { arbitrary: FastCheck.constantFrom(0, 1, INTERVAL_MS - 1, INTERVAL_MS, INTERVAL_MS + 1), weight: 2 },
      { arbitrary: FastCheck.integer({ min: 0, max: 3 * INTERVAL_MS }), weight: 1 }
    ).map((ms): Command => ({ _tag: "AdvanceClock", ms })),
    weight: 3
  },
  { arbitrary: FastCheck.constant<Command>({ _tag: "Sweep" }), weight: 1 }
)
const refresh = (back: number): Command => ({ _tag: "Refresh", back })
const advance = (ms: number): Command => ({ _tag: "AdvanceClock", ms })

/** Always run first, so both sides of the boundary, an older ancestor and logout are hit on every run. */
const examples: Array<[Array<Command>]> = [
  // The immediate predecessor, exactly at the interval: the same child again.
  [[{ _tag: "SignIn", user: 0 }, refresh(0), advance(INTERVAL_MS), refresh(1), refresh(0)]],
  // One millisecond past it: reuse, and the session (the child with it) ends.
  [[{ _tag: "SignIn", user: 0 }, refresh(0), advance(INTERVAL_MS + 1), refresh(1), refresh(0)]],
  // An older ancestor within the interval: reuse.
  [[{ _tag: "SignIn", user: 0 }, refresh(0), refresh(0), refresh(2), refresh(0), refresh(1)]],
  // After logout every token of the session is unknown; the other user's session lives on.
  [[{ _tag: "SignIn", user: 0 }, { _tag: "SignIn", user: 1 }, refresh(1), { _tag: "Logout", back: 1, scope: "global" },
    refresh(0), refresh(1), refresh(2)]],
  // A swept grandparent is still reuse; the swept-past parent of the current token is kept and still forgiven.
  [[{ _tag: "SignIn", user: 0 }, refresh(0), refresh(0), advance(1), { _tag: "Sweep" }, refresh(1), refresh(2)]],
  [[{ _tag: "SignIn", user: 0 }, refresh(0), refresh(0), advance(1), { _tag: "Sweep" }, refresh(1), refresh(0)]]
]

const commands = FastCheck.tuple(signIn, FastCheck.array(command, { maxLength: 24, size: "max" })).map(([first, rest]) => [
  first,
  ...rest
])

// ---------------------------------------------------------------------------------------------------------------
// Running a sequence on both

interface TokenRow {
  readonly token: string
  readonly parent: string | null
  readonly revoked: boolean
  readonly updated_at: Date
  readonly session_id: string
}

/** One housekeeping run at `now`: every task, each due (their saved state forgotten first). */
type Sweep = (now: Date) => Effect.Effect<void, never, SqlClient.SqlClient | PlatformConfig>

const runSequence = (sessions: Sessions, policy: Policy, cmds: ReadonlyArray<Command>, sweep: Sweep) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const users = yield* Users
    const t = authTables((yield* PlatformConfig).db.namespace)
    const model = new Model(policy)

    // Fresh users per run: no run sees another's sessions, even across global logout.
    const userIds: Array<string> = []
    for (let i = 0; i < 2; i++) {
      const user = yield* users.create({
        aud: "authenticated",
        role: "authenticated",
        email: `model-${randomUUID()}@example.com`,
        phone: null,
        encryptedPassword: null,
        userMetadata: {},
        provider: "email",
        emailConfirmedAt: new Date(START),
        phoneConfirmedAt: null,
        isAnonymous: false,
        madeBy: "signup",
        now: new Date(START)
      })
      userIds.push(user.id)
    }
    const tokenStrings: Array<string> = []
    const sessionIds: Array<string> = []
    const trace: Array<string> = []
    const where = () => `after ${trace.join(" → ")}`

    const compareState = Effect.gen(function*() {
      const rows = yield* sql<TokenRow>`
        SELECT token, parent, revoked, updated_at, session_id::text AS session_id FROM ${sql(t.refresh_tokens)}
        WHERE user_id IN ${sql.in(userIds)}`
      const byDigest = new Map(rows.map((r) => [r.token, r]))
      let present = 0
      model.tokens.forEach((token, id) => {
        const expected = model.state(id)
        const row = byDigest.get(digestRefreshToken(tokenStrings[id]!))
        if (expected._tag === "Gone") {
          expect(row, `token #${id} should be gone ${where()}`).toBeUndefined()
          return
        }
        // P2: only a revoked token that is the parent of no live one may have been swept.
        if (row === undefined && expected._tag === "Revoked") {
          const parentOfLive = model.tokens.some((child) => child.parent === id && model.state(child.id)._tag === "Live")
          expect(parentOfLive, `token #${id}, the parent of a live token, was swept ${where()}`).toBe(false)
          return
        }
        present++
        expect(row, `token #${id} should exist ${where()}`).toBeDefined()
        expect(row!.session_id, `session of token #${id} ${where()}`).toBe(sessionIds[token.session])
        expect(row!.parent, `parent of token #${id} ${where()}`).toBe(
          token.parent === null ? null : digestRefreshToken(tokenStrings[token.parent]!)
        )
        expect(row!.revoked, `revoked flag of token #${id} ${where()}`).toBe(expected._tag === "Revoked")
        if (expected._tag === "Revoked") {
          expect(row!.updated_at.getTime(), `revocation time of token #${id} ${where()}`).toBe(expected.at)
        }
      })
      // No row the model does not know of: no duplicated or stray child.
      expect(rows.length, `number of token rows ${where()}`).toBe(present)
      const live = yield* sql<{ id: string }>`
        SELECT id::text AS id FROM ${sql(t.sessions)} WHERE user_id IN ${sql.in(userIds)}`
      expect(new Set(live.map((r) => r.id)), `live sessions ${where()}`).toEqual(
        new Set(model.sessions.filter((s) => s.alive).map((s) => sessionIds[s.id]))
      )
    })

    const refreshAndCompare = (id: number) =>
      Effect.gen(function*() {
        const expected = model.refresh(id)
        const actual = yield* Effect.either(sessions.refresh(tokenStrings[id]!, new Date(model.now)))
        trace.push(`Refresh(#${id}) = ${expected._tag === "Issued" ? `#${expected.token}` : expected.code}`)
        if (expected._tag === "Refused") {
          expect(Either.isLeft(actual) ? actual.left.code : "issued", `outcome ${where()}`).toBe(expected.code)
          return
        }
        expect(Either.isRight(actual) ? "issued" : actual.left.code, `outcome ${where()}`).toBe("issued")
        const issued = Either.getOrThrow(actual)
        expect(issued.sessionId, `session ${where()}`).toBe(sessionIds[model.tokens[id]!.session])
        if (expected.fresh) {
          expect(tokenStrings, `a rotation handed out an old token ${where()}`).not.toContain(issued.refreshToken)
          tokenStrings[expected.token] = issued.refreshToken
        } else {
          // The reuse interval returns exactly the child issued before, not a new one.
          expect(issued.refreshToken, `returned child ${where()}`).toBe(tokenStrings[expected.token])
        }
      })

    for (const cmd of cmds) {
      switch (cmd._tag) {
        case "SignIn": {
          const expected = model.signIn(cmd.user)
          const started = yield* sql.withTransaction(sessions.start(userIds[cmd.user]!, "password", new Date(model.now)))
          expect(tokenStrings, `a new session reuses a token ${where()}`).not.toContain(started.refreshToken)
          sessionIds[expected.session] = started.sessionId
          tokenStrings[expected.token] = started.refreshToken
          trace.push(`SignIn(u${cmd.user}) = s${expected.session}/#${expected.token}`)
          break
        }
        case "Refresh": {
          if (model.tokens.length === 0) break
          yield* refreshAndCompare(model.tokens.length - 1 - (cmd.back % model.tokens.length))
          break
        }
        case "Sweep":
          yield* sweep(new Date(model.now))
          trace.push("Sweep")
          break
        case "Logout": {
          const live = model.sessions.filter((s) => s.alive)
          if (live.length === 0) break
          const session = live[live.length - 1 - (cmd.back % live.length)]!
          model.logout(session.id, cmd.scope)
          yield* sessions.logout(userIds[session.user]!, sessionIds[session.id], cmd.scope)
          trace.push(`Logout(s${session.id}, ${cmd.scope})`)
          break
        }
        case "AdvanceClock":
          model.now += cmd.ms
          trace.push(`+${cmd.ms}ms`)
          break
      }
      yield* compareState
    }

    // P3: after a sweep, every token handed out so far presented again, oldest first.
    yield* sweep(new Date(model.now))
    trace.push("Sweep, then every token again")
    yield* compareState
    const handedOut = model.tokens.length
    for (let id = 0; id < handedOut; id++) {
      yield* refreshAndCompare(id)
      yield* compareState
    }

    // Which tokens still work, the point of it all: those the model calls live, and no others.
    const usable = yield* sql<{ token: string }>`
      SELECT token FROM ${sql(t.refresh_tokens)} WHERE user_id IN ${sql.in(userIds)} AND revoked = false`
    expect(new Set(usable.map((r) => r.token)), `usable tokens ${where()}`).toEqual(
      new Set(model.tokens.filter((tk) => model.state(tk.id)._tag === "Live").map((tk) => digestRefreshToken(tokenStrings[tk.id]!)))
    )
  })

// ---------------------------------------------------------------------------------------------------------------

const Setup = Users.Default.pipe(
  Layer.provideMerge(SecureRandom.Live),
  Layer.provideMerge(configLayer(testConfig())),
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

/**
 * Every auth housekeeping task as the server builds them, except that the refresh tokens' margins are 0: a revoked
 * row goes at the first sweep after its revocation.
 */
const sweepWith = (config: ReturnType<typeof testConfig>) =>
  Effect.gen(function*() {
    const layers = Layer.mergeAll(AuthHousekeepingTasksLive, RefreshTokenSweepRepo.Default).pipe(Layer.provide(configLayer(config)))
    const { others, repo } = yield* Effect.provide(
      Effect.all({ others: authHousekeepingTasks, repo: RefreshTokenSweepRepo }),
      layers
    )
    const tasks = [
      ...refreshTokenTasks(repo, refreshTokenKey(Redacted.value(config.jwt.secret)), {
        revokedKept: Duration.zero,
        orphansKept: Duration.zero
      }),
      ...others.filter((task) => !task.name.startsWith("refresh_tokens/"))
    ]
    const sweep: Sweep = (now) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const table = qualifiedTables("auth", (yield* PlatformConfig).db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping
        yield* Effect.orDie(sql`DELETE FROM ${sql(table)}`)
        const run = yield* runHousekeeping(tasks, yield* authHousekeepingState, now, { budget: Duration.hours(1), pause: Duration.zero })
        expect(run.busy).toBe(false)
      })
    return sweep
  })

const policies: ReadonlyArray<Policy> = [
  { rotation: true, intervalMs: INTERVAL_MS },
  { rotation: false, intervalMs: INTERVAL_MS }
]

layer(Setup, { timeout: 120_000 })("refresh-token rotation against a reference model", (it) => {
  for (const policy of policies) {
    it.effect(`real service and model agree (rotation ${policy.rotation ? "on" : "off"}, interval 10s)`, () =>
      Effect.gen(function*() {
        const config = testConfig({
          AUTH_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: String(policy.rotation),
          AUTH_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: String(INTERVAL_MS / 1000)
        })
        expect(config.security.refreshTokenRotationEnabled).toBe(policy.rotation)
        expect(Duration.toMillis(config.security.refreshTokenReuseInterval)).toBe(policy.intervalMs)
        const sessions = yield* Effect.provide(Sessions, Sessions.Default.pipe(Layer.provide(configLayer(config))))
        const sweep = yield* sweepWith(config)
        const runtime = yield* Effect.runtime<Users | SqlClient.SqlClient | ConfigTags>()
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(commands, (cmds) => Runtime.runPromise(runtime)(runSequence(sessions, policy, cmds, sweep))),
            { numRuns: 50, examples }
          )
        )
      }), 120_000)
  }
})
