import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option, Redacted } from "effect"
import type { AuthError } from "../../../src/auth/domain/AuthError.js"
import { encodeSignedRefreshToken } from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import { RefreshTokensRepo } from "../../../src/auth/sessions/RefreshTokensRepo.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { SessionsRepo } from "../../../src/auth/sessions/SessionsRepo.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { AuditLogRepo } from "../../../src/auth/users/AuditLogRepo.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { isGatehouseRefreshToken } from "../../support/GatehouseTokens.js"
import { testConfig } from "../../support/TestServer.js"
import { MemoryRepos } from "../support/MemoryRepos.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

/*
 * Spec §3's rotation and reuse rules through the Sessions service itself, over the in-memory repos: no database.
 * RefreshModel.test.ts checks the same rules against Postgres; RepoContract.test.ts keeps the two repos alike.
 */

const INTERVAL_S = 10
const T0 = Date.UTC(2030, 0, 1)
const at = (seconds: number) => new Date(T0 + seconds * 1000)

const SessionsOverMemory = (env: Record<string, string> = {}) =>
  Sessions.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(AuditLog.DefaultWithoutDependencies),
    Layer.provideMerge(CurrentClient.Default),
    Layer.provideMerge(MemoryRepos()),
    Layer.provide(Transactions.Test),
    Layer.provide(SecureRandom.Live),
    Layer.provide(configLayer(testConfig({ AUTH_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: String(INTERVAL_S), ...env })))
  )

const signIn = Effect.gen(function*() {
  const users = yield* UsersRepo
  const sessions = yield* Sessions
  const user = yield* users.insert({
    id: randomUUID(),
    aud: "authenticated",
    role: "authenticated",
    email: `rules-${randomUUID().slice(0, 8)}@example.com`,
    phone: null,
    encrypted_password: "",
    email_confirmed_at: at(0),
    phone_confirmed_at: null,
    raw_app_meta_data: {},
    raw_user_meta_data: {},
    is_anonymous: false,
    now: at(0)
  })
  return yield* sessions.start(user.id, "password", at(0))
})

const refusal = (result: Either.Either<unknown, AuthError>) => Either.isLeft(result) ? result.left.code : "issued"

layer(SessionsOverMemory())("refresh rotation over the in-memory repos (rotation on)", (it) => {
  it.effect("a valid token rotates: a new token, the user signed in, the amr claims unchanged (GoTrue adds none on refresh)", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      expect(started.user.last_sign_in_at).toEqual(at(0))
      expect(started.amr.map((a) => a.method)).toEqual(["password"])
      const refreshed = yield* sessions.refresh(started.refreshToken, at(1))
      expect(refreshed.sessionId).toBe(started.sessionId)
      expect(refreshed.refreshToken).not.toBe(started.refreshToken)
      expect(refreshed.amr.map((a) => a.method)).toEqual(["password"])
    }))

  it.effect("the parent of the current token, within the interval, hands out the same child again", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      const child = yield* sessions.refresh(started.refreshToken, at(1))
      const again = yield* sessions.refresh(started.refreshToken, at(1 + INTERVAL_S))
      expect(again.refreshToken).toBe(child.refreshToken)
      // Forgiven, not reuse: the session and its access tokens live on.
      const found = yield* (yield* SessionsRepo).findForSession(started.user.id, started.sessionId)
      expect(Option.map(found, (f) => f.sessionExists)).toEqual(Option.some(true))
      // The child is still valid and rotates as usual.
      const grandchild = yield* sessions.refresh(child.refreshToken, at(2 + INTERVAL_S))
      expect(grandchild.refreshToken).not.toBe(child.refreshToken)
    }))

  it.effect("reuse after the interval is refused and ends the session, so the thief's child dies too", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const sessionsRepo = yield* SessionsRepo
      const started = yield* signIn
      const child = yield* sessions.refresh(started.refreshToken, at(1))
      const reuse = yield* Effect.either(sessions.refresh(started.refreshToken, at(2 + INTERVAL_S)))
      expect(refusal(reuse)).toBe("refresh_token_already_used")
      // The rotation's two entries, then the revocation the reuse caused (committed with the refusal).
      const logged = yield* (yield* AuditLogRepo).page(1, 10, { field: "author", value: started.user.email! })
      expect(logged.entries.map((e) => [e.payload["action"], e.payload["traits"]])).toEqual([
        ["token_revoked", { reason: "refresh_token_reused", session_id: started.sessionId }],
        ["token_refreshed", undefined],
        ["token_revoked", undefined]
      ])
      // The session is gone, so its access tokens are refused at GET /user and its tokens are unknown.
      const found = yield* sessionsRepo.findForSession(started.user.id, started.sessionId)
      expect(Option.map(found, (f) => f.sessionExists)).toEqual(Option.some(false))
      expect(refusal(yield* Effect.either(sessions.refresh(child.refreshToken, at(3 + INTERVAL_S))))).toBe("refresh_token_not_found")
    }))

  it.effect("a grandparent is never forgiven, even within the interval", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      const child = yield* sessions.refresh(started.refreshToken, at(1))
      yield* sessions.refresh(child.refreshToken, at(2))
      expect(refusal(yield* Effect.either(sessions.refresh(started.refreshToken, at(3))))).toBe("refresh_token_already_used")
    }))

  it.effect("after logout the session's tokens are not found; a malformed token is a validation error", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      yield* sessions.logout(started.user.id, started.sessionId, "local")
      expect(refusal(yield* Effect.either(sessions.refresh(started.refreshToken, at(1))))).toBe("refresh_token_not_found")
      expect(refusal(yield* Effect.either(sessions.refresh("not a token", at(1))))).toBe("validation_failed")
    }))

  it.effect("logout of the others keeps the caller's session", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const first = yield* signIn
      const second = yield* sessions.start(first.user.id, "password", at(0))
      yield* sessions.logout(first.user.id, first.sessionId, "others")
      expect(refusal(yield* Effect.either(sessions.refresh(second.refreshToken, at(1))))).toBe("refresh_token_not_found")
      expect(refusal(yield* Effect.either(sessions.refresh(first.refreshToken, at(1))))).toBe("issued")
    }))
})

layer(SessionsOverMemory({ AUTH_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: "false" }))("refresh over the in-memory repos (rotation off)", (it) => {
  it.effect("reuse is refused and revokes nothing: the session lives on", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      const child = yield* sessions.refresh(started.refreshToken, at(1))
      expect(refusal(yield* Effect.either(sessions.refresh(started.refreshToken, at(2 + INTERVAL_S))))).toBe("refresh_token_already_used")
      const found = yield* (yield* SessionsRepo).findForSession(started.user.id, started.sessionId)
      expect(Option.map(found, (f) => f.sessionExists)).toEqual(Option.some(true))
      expect(refusal(yield* Effect.either(sessions.refresh(child.refreshToken, at(3 + INTERVAL_S))))).toBe("issued")
    }))
})

layer(SessionsOverMemory())("a step-up over the in-memory repos", (it) => {
  const factorOf = (userId: string) => ({
    id: randomUUID(), user_id: userId, friendly_name: null, factor_type: "totp" as const, status: "verified" as const,
    created_at: at(0), updated_at: at(0), phone: null, last_challenged_at: null, web_authn_aaguid: null,
    last_webauthn_challenge_data: null
  })

  it.effect("raises the session: the factor's claim first, a new refresh token; the one held before is reuse and ends it", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      const other = yield* sessions.start(started.user.id, "password", at(1))
      const raised = yield* sessions.stepUp(started.sessionId, factorOf(started.user.id), at(2))
      expect(raised.sessionId).toBe(started.sessionId)
      expect(raised.amr.map((a) => a.method)).toEqual(["totp", "password"])
      expect(raised.refreshToken).not.toBe(started.refreshToken)
      // The user's other session was below aal2: it is gone.
      expect(refusal(yield* Effect.either(sessions.refresh(other.refreshToken, at(3))))).toBe("refresh_token_not_found")
      // The raised session's token works and keeps the claims.
      const next = yield* sessions.refresh(raised.refreshToken, at(3))
      expect(next.amr.map((a) => a.method)).toEqual(["totp", "password"])
      // The aal1 token of before, even within the reuse interval, is reuse: the session ends.
      expect(refusal(yield* Effect.either(sessions.refresh(started.refreshToken, at(4))))).toBe("refresh_token_already_used")
      expect(refusal(yield* Effect.either(sessions.refresh(next.refreshToken, at(5))))).toBe("refresh_token_not_found")
    }))

  it.effect("a session that ended before the step-up is refused, not raised", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const started = yield* signIn
      yield* sessions.logout(started.user.id, started.sessionId, "local")
      const result = yield* Effect.either(sessions.stepUp(started.sessionId, factorOf(started.user.id), at(2)))
      expect(refusal(result)).toBe("session_not_found")
    }))
})

layer(SessionsOverMemory())("a session GoTrue started, over the in-memory repos", (it) => {
  it.effect("GoTrue's legacy tokens: the current one rotates to Gatehouse's; its parent, within the interval, gets GoTrue's child as stored", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const sessionsRepo = yield* SessionsRepo
      const tokens = yield* RefreshTokensRepo
      const { user } = yield* signIn
      // What GoTrue left: a session whose first token (stored as it is) was rotated into a second at t=10.
      const sessionId = randomUUID()
      yield* sessionsRepo.insert({ id: sessionId, userId: user.id, now: at(0) })
      yield* sessionsRepo.addAmr(sessionId, "password", at(0))
      const first = yield* tokens.nextId()
      yield* tokens.insert({ id: first, digest: "gotrue000001", userId: user.id, parent: null, sessionId, now: at(0) })
      yield* tokens.rotate(first, { id: yield* tokens.nextId(), digest: "gotrue000002", userId: user.id, parent: "gotrue000001", sessionId, now: at(10) })

      // The parent within the interval: GoTrue's child, as GoTrue stored it (it cannot be derived).
      const retried = yield* sessions.refresh("gotrue000001", at(12))
      expect(retried.refreshToken).toBe("gotrue000002")
      expect(retried.amr.map((a) => a.method)).toEqual(["password"])
      // The current one rotates into a Gatehouse token, and the session goes on from there.
      const rotated = yield* sessions.refresh("gotrue000002", at(13))
      expect(rotated.sessionId).toBe(sessionId)
      expect(isGatehouseRefreshToken(rotated.refreshToken, Redacted.value(testConfig().jwt.secret))).toBe(true)
      expect((yield* sessions.refresh(rotated.refreshToken, at(14))).sessionId).toBe(sessionId)
      // GoTrue's first token, now past the interval: reuse, and the session ends.
      expect(refusal(yield* Effect.either(sessions.refresh("gotrue000001", at(60))))).toBe("refresh_token_already_used")
    }))
})

layer(SessionsOverMemory())("GoTrue's signed tokens, over the in-memory repos", (it) => {
  it.effect("a signed token for a session GoTrue never signed for (no key), or one that does not read, is unknown", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const { sessionId } = yield* signIn
      const forged = encodeSignedRefreshToken(Buffer.alloc(32, 1), sessionId, 0n)
      expect(refusal(yield* Effect.either(sessions.refresh(forged, at(1))))).toBe("refresh_token_not_found")
      expect(refusal(yield* Effect.either(sessions.refresh(`${forged.slice(0, -1)}A`, at(1))))).toBe("refresh_token_not_found")
      expect(refusal(yield* Effect.either(sessions.refresh("A".repeat(51), at(1))))).toBe("refresh_token_not_found")
      // Not of any token's shape: refused before any lookup, as before.
      expect(refusal(yield* Effect.either(sessions.refresh("A".repeat(53), at(1))))).toBe("validation_failed")
    }))
})
