import { randomUUID } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { type RequestRate, requestRate } from "../../src/domain/RequestRate.js"
import { RateLimitsRepo } from "../../src/auth/limits/RateLimitsRepo.js"
import { type OutboxRow, OutboxRepo } from "../../src/auth/messages/OutboxRepo.js"
import { RecipientSendsRepo } from "../../src/auth/messages/RecipientSendsRepo.js"
import { SendQuotaRepo } from "../../src/auth/messages/SendQuotaRepo.js"
import { FlowStateRepo } from "../../src/auth/sessions/FlowStateRepo.js"
import { RefreshTokensRepo } from "../../src/auth/sessions/RefreshTokensRepo.js"
import { SessionsRepo } from "../../src/auth/sessions/SessionsRepo.js"
import { AuditLogRepo } from "../../src/auth/users/AuditLogRepo.js"
import { IdentitiesRepo } from "../../src/auth/users/IdentitiesRepo.js"
import { OtpAttemptsRepo } from "../../src/auth/users/OtpAttemptsRepo.js"
import { OneTimeTokensRepo } from "../../src/auth/users/OneTimeTokensRepo.js"
import { PendingTokensRepo } from "../../src/auth/users/PendingTokensRepo.js"
import type { TokenKind } from "../../src/auth/domain/LinkToken.js"
import { UsersRepo } from "../../src/auth/users/UsersRepo.js"
import { configLayer, type ConfigTags } from "../../src/config/AppConfig.js"
import type { Database } from "../../src/platform/sql/Database.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../support/TestDatabase.js"
import { testConfig } from "../support/TestServer.js"
import { type AuthRepos, MemoryRepos } from "./support/MemoryRepos.js"

/*
 * One contract, two implementations: every case runs against the Live repos on the real database (PGlite, or
 * PostgreSQL with DATABASE_URL) and against the in-memory Test layers, so the rules tests built on the Test
 * layers test the behaviour the server has.
 */

/** The migrated test database and the config the repos read, with no repo built on it yet. */
const MigratedDatabase: Layer.Layer<ConfigTags | Database> = configLayer(testConfig()).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

const LiveRepos: Layer.Layer<AuthRepos> = Layer.mergeAll(
  UsersRepo.Default,
  IdentitiesRepo.Default,
  SessionsRepo.Default,
  RefreshTokensRepo.Default,
  OtpAttemptsRepo.Default,
  PendingTokensRepo.Default,
  OneTimeTokensRepo.Default,
  FlowStateRepo.Default,
  SendQuotaRepo.Default,
  RecipientSendsRepo.Default,
  RateLimitsRepo.Default,
  AuditLogRepo.Default,
  OutboxRepo.Default
).pipe(Layer.provideMerge(MigratedDatabase)) as Layer.Layer<AuthRepos>

const T0 = new Date(Date.UTC(2030, 0, 1))
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000)

const newUser = (fields: { email?: string | null; phone?: string | null; aud?: string } = {}) => ({
  id: randomUUID(),
  aud: fields.aud ?? "authenticated",
  role: "authenticated",
  email: fields.email === undefined ? `c-${randomUUID().slice(0, 8)}@example.com` : fields.email,
  phone: fields.phone ?? null,
  encrypted_password: "",
  email_confirmed_at: at(0),
  phone_confirmed_at: null,
  raw_app_meta_data: { provider: "email" },
  raw_user_meta_data: { a: 1 },
  is_anonymous: false,
  now: at(0)
})

const uniquePhone = () => `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`

/** A user with one session holding one token, as Sessions.start leaves them. */
const withSession = Effect.gen(function*() {
  const users = yield* UsersRepo
  const sessions = yield* SessionsRepo
  const tokens = yield* RefreshTokensRepo
  const user = yield* users.insert(newUser())
  const sessionId = randomUUID()
  yield* sessions.insert({ id: sessionId, userId: user.id, now: at(0) })
  const id = yield* tokens.nextId()
  const digest = `d-${randomUUID()}`
  yield* tokens.insert({ id, digest, userId: user.id, parent: null, sessionId, now: at(0) })
  return { user, sessionId, tokenId: id, digest }
})

const contract = (name: string, repos: Layer.Layer<AuthRepos>) =>
  layer(repos, { timeout: 60_000 })(name, (it) => {
    it.effect("users: found by email in any case, by phone and by id, each lookup scoped by audience", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const phone = uniquePhone()
        const inserted = yield* users.insert(newUser({ email: `Mixed-${randomUUID().slice(0, 8)}@Example.com`, phone }))
        expect(inserted.confirmed_at).toEqual(at(0))
        expect(inserted.is_sso_user).toBe(false)
        const byEmail = yield* users.findByEmail("authenticated", inserted.email!.toUpperCase())
        expect(Option.map(byEmail, (u) => u.id)).toEqual(Option.some(inserted.id))
        expect(Option.isNone(yield* users.findByEmail("other-audience", inserted.email!))).toBe(true)
        expect(Option.map(yield* users.findByPhone("authenticated", phone), (u) => u.id)).toEqual(Option.some(inserted.id))
        expect(Option.isNone(yield* users.findByPhone("other-audience", phone))).toBe(true)
        expect(Option.map(yield* users.findById(inserted.id), (u) => u.raw_user_meta_data)).toEqual(Option.some({ a: 1 }))
        yield* users.remove(inserted.id)
        expect(Option.isNone(yield* users.findById(inserted.id))).toBe(true)
      }))

    it.effect("users: a taken email or phone is a UniqueViolation on insert and update, in any audience", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const phone = uniquePhone()
        const first = yield* users.insert(newUser({ phone }))
        const sameEmail = yield* Effect.either(users.insert(newUser({ email: first.email, aud: "other-audience" })))
        expect(Either.isLeft(sameEmail) && sameEmail.left._tag).toBe("UniqueViolation")
        const samePhone = yield* Effect.either(users.insert(newUser({ phone })))
        expect(Either.isLeft(samePhone) && samePhone.left._tag).toBe("UniqueViolation")
        const second = yield* users.insert(newUser())
        const moved = yield* Effect.either(users.update(second.id, { email: first.email }, at(1)))
        expect(Either.isLeft(moved) && moved.left._tag).toBe("UniqueViolation")
        expect(yield* users.isTaken("email", first.email!.toUpperCase(), second.id)).toBe(true)
        expect(yield* users.isTaken("email", first.email!, first.id)).toBe(false)
        expect(yield* users.isTaken("phone", phone, second.id)).toBe(true)
        const updated = yield* users.update(second.id, { raw_user_meta_data: { b: 2 }, phone_confirmed_at: at(-5) }, at(2))
        expect(updated.raw_user_meta_data).toEqual({ b: 2 })
        expect(updated.updated_at).toEqual(at(2))
        expect(updated.confirmed_at).toEqual(at(-5))
      }))

    it.effect("users: claimSend stamps the column only once the window has passed", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const user = yield* users.insert(newUser())
        const window = Duration.seconds(60)
        const first = yield* users.claimSend(user.id, "confirmation_sent_at", window, at(10), { confirmation_token: "t1" })
        expect(Option.map(first, (u) => [u.confirmation_sent_at, u.confirmation_token])).toEqual(Option.some([at(10), "t1"]))
        expect(Option.isNone(yield* users.claimSend(user.id, "confirmation_sent_at", window, at(69), {}))).toBe(true)
        const again = yield* users.claimSend(user.id, "confirmation_sent_at", window, at(70), { confirmation_token: "t2" })
        expect(Option.map(again, (u) => u.confirmation_token)).toEqual(Option.some("t2"))
        const other = yield* users.claimSend(user.id, "reauthentication_sent_at", window, at(71), {})
        expect(Option.map(other, (u) => u.reauthentication_sent_at)).toEqual(Option.some(at(71)))
      }))

    it.effect("users: found by a token hash in the named columns, by a pending email or phone change, and locked by id", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const user = yield* users.insert(newUser())
        const hash = `h-${randomUUID()}`
        const newEmail = `n-${randomUUID().slice(0, 8)}@example.com`
        const phone = uniquePhone()
        yield* users.update(user.id, { email_change_token_current: hash, email_change: newEmail, phone_change: phone }, at(1))
        expect(Option.map(yield* users.findByToken(["email_change_token_new", "email_change_token_current"], hash), (u) => u.id))
          .toEqual(Option.some(user.id))
        expect(Option.isNone(yield* users.findByToken(["confirmation_token"], hash))).toBe(true)
        expect(Option.isNone(yield* users.findByToken(["email_change_token_current"], ""))).toBe(true)
        for (const email of [newEmail.toUpperCase(), user.email!]) {
          expect(Option.map(yield* users.findByEmailChange("authenticated", email), (u) => u.id)).toEqual(Option.some(user.id))
        }
        expect(Option.isNone(yield* users.findByEmailChange("other-audience", newEmail))).toBe(true)
        expect(Option.map(yield* users.findByPhoneChange("authenticated", phone), (u) => u.id)).toEqual(Option.some(user.id))
        expect(Option.map(yield* users.lockById(user.id), (u) => u.email_change_token_current)).toEqual(Option.some(hash))
        const plain = yield* users.insert(newUser())
        expect(plain.email_change_token_current).toBe("")
        expect(plain.phone_change_token).toBe("")
        expect(plain.email_change_confirm_status).toBe(0)
        expect(Option.isNone(yield* users.findByEmailChange("authenticated", plain.email!))).toBe(true)
      }))

    it.effect("users: list pages an audience newest first with its total; the filter matches email, phone or full_name literally", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const aud = `list-${randomUUID().slice(0, 8)}`
        const make = (n: number, fields: { email?: string | null; phone?: string | null }, meta: Record<string, unknown> = {}) =>
          users.insert({ ...newUser({ ...fields, aud }), raw_user_meta_data: meta, now: at(n) })
        const tag = randomUUID().slice(0, 6)
        const a = yield* make(1, { email: `Alpha-${tag}@example.com` })
        const b = yield* make(2, { email: null, phone: uniquePhone() })
        const c = yield* make(3, { email: `c_${tag}@example.com` }, { full_name: "Grace Hopper" })
        const d = yield* make(4, { email: `d-${tag}@example.com` })
        yield* users.insert(newUser())
        const ids = (list: { readonly users: ReadonlyArray<{ readonly id: string }>; readonly total: number }) => [list.users.map((u) => u.id), list.total]

        expect(ids(yield* users.list({ aud, filter: "", page: 1, perPage: 3 }))).toEqual([[d.id, c.id, b.id], 4])
        expect(ids(yield* users.list({ aud, filter: "", page: 2, perPage: 3 }))).toEqual([[a.id], 4])
        expect(ids(yield* users.list({ aud, filter: "", page: 3, perPage: 3 }))).toEqual([[], 4])
        expect(ids(yield* users.list({ aud, filter: `ALPHA-${tag}`, page: 1, perPage: 50 }))).toEqual([[a.id], 1])
        expect(ids(yield* users.list({ aud, filter: "grace HOP", page: 1, perPage: 50 }))).toEqual([[c.id], 1])
        expect(ids(yield* users.list({ aud, filter: b.phone!.slice(3), page: 1, perPage: 50 }))).toEqual([[b.id], 1])
        // LIKE's wildcards match only themselves: "_" is in c's email and nowhere else.
        expect(ids(yield* users.list({ aud, filter: "_", page: 1, perPage: 50 }))).toEqual([[c.id], 1])
        expect(ids(yield* users.list({ aud, filter: "%", page: 1, perPage: 50 }))).toEqual([[], 0])
        expect(ids(yield* users.list({ aud: `${aud}-other`, filter: "", page: 1, perPage: 50 }))).toEqual([[], 0])
      }))

    it.effect("users: replacePasswordHash stores the new hash only over the one it names", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const user = yield* users.insert({ ...newUser(), encrypted_password: "$2a$13$old" })
        expect(yield* users.replacePasswordHash(user.id, "$2a$13$other", "$2a$10$new")).toBe(false)
        expect(Option.map(yield* users.findById(user.id), (u) => u.encrypted_password)).toEqual(Option.some("$2a$13$old"))
        expect(yield* users.replacePasswordHash(user.id, "$2a$13$old", "$2a$10$new")).toBe(true)
        expect(Option.map(yield* users.findById(user.id), (u) => u.encrypted_password)).toEqual(Option.some("$2a$10$new"))
      }))

    it.effect("users: update sets role, banned_until and deleted_at; remove deletes the row", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const user = yield* users.insert(newUser())
        const updated = yield* users.update(user.id, { role: "editor", banned_until: at(60), deleted_at: at(5) }, at(5))
        expect([updated.role, updated.banned_until, updated.deleted_at, updated.updated_at]).toEqual(["editor", at(60), at(5), at(5)])
        yield* users.remove(user.id)
        expect(Option.isNone(yield* users.findById(user.id))).toBe(true)
      }))

    it.effect("identities and refresh tokens: removeForUser deletes one user's rows and no one else's", () =>
      Effect.gen(function*() {
        const identities = yield* IdentitiesRepo
        const tokens = yield* RefreshTokensRepo
        const a = yield* withSession
        const b = yield* withSession
        for (const user of [a.user, b.user]) {
          yield* identities.insert({ id: randomUUID(), provider_id: user.id, user_id: user.id, identity_data: { sub: user.id }, provider: "email", now: at(0) })
        }
        expect((yield* identities.forUser(a.user.id)).length).toBe(1)
        yield* identities.removeForUser(a.user.id)
        yield* tokens.removeForUser(a.user.id)
        expect(yield* identities.forUser(a.user.id)).toEqual([])
        expect((yield* identities.forUser(b.user.id)).length).toBe(1)
        expect(Option.isNone(yield* tokens.lock(a.digest))).toBe(true)
        expect(Option.isSome(yield* tokens.lock(b.digest))).toBe(true)
      }))

    it.effect("otp attempts: misses count per user, kind and token hash; clear forgets them", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const attempts = yield* OtpAttemptsRepo
        const user = yield* users.insert(newUser())
        expect(yield* attempts.recordMiss(user.id, "confirmation", "a", at(1))).toBe(1)
        expect(yield* attempts.recordMiss(user.id, "confirmation", "a", at(2))).toBe(2)
        expect(yield* attempts.recordMiss(user.id, "phone_change", "a", at(3))).toBe(1)
        expect(yield* attempts.recordMiss(user.id, "confirmation", "b", at(4))).toBe(1)
        yield* attempts.clear(user.id, ["confirmation"])
        expect(yield* attempts.recordMiss(user.id, "confirmation", "b", at(5))).toBe(1)
        expect(yield* attempts.recordMiss(user.id, "phone_change", "a", at(6))).toBe(2)
      }))

    it.effect("pending tokens: one per user and kind, found by link digest and by kind, replaced, removed", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const pending = yield* PendingTokensRepo
        const user = yield* users.insert(newUser())
        const row = (kind: TokenKind, digest: string | null, code: string) => ({
          user_id: user.id,
          token_kind: kind,
          link_digest: digest,
          code_hash: code,
          created_at: at(1),
          reclaim: false,
          signup_password: null,
          signup_data: null
        })
        const digest = `d-${randomUUID()}`
        yield* pending.put(row("confirmation", digest, "c1"))
        yield* pending.put(row("recovery", `r-${randomUUID()}`, "r1"))
        yield* pending.put(row("phone_change", null, "p1"))
        expect(Option.map(yield* pending.findByLink(digest), (found) => [found.token_kind, found.code_hash])).toEqual(Option.some(["confirmation", "c1"]))
        const replacement = `d-${randomUUID()}`
        yield* pending.put({ ...row("confirmation", replacement, "c2"), reclaim: true, signup_password: "$2a$10$hash", signup_data: { plan: "pro" } })
        expect(Option.isNone(yield* pending.findByLink(digest))).toBe(true)
        expect(yield* pending.find(user.id, "confirmation")).toEqual(Option.some({
          ...row("confirmation", replacement, "c2"),
          reclaim: true,
          signup_password: "$2a$10$hash",
          signup_data: { plan: "pro" }
        }))
        yield* pending.remove(user.id, ["confirmation"])
        expect(Option.isNone(yield* pending.find(user.id, "confirmation"))).toBe(true)
        expect(Option.isSome(yield* pending.find(user.id, "recovery"))).toBe(true)
        yield* pending.remove(user.id, [])
        expect(Option.isSome(yield* pending.find(user.id, "recovery"))).toBe(true)
        yield* pending.removeForUser(user.id)
        expect(Option.isNone(yield* pending.find(user.id, "recovery"))).toBe(true)
        expect(Option.isNone(yield* pending.find(user.id, "phone_change"))).toBe(true)
        expect((yield* pending.linkTokensSince).getTime()).toBeLessThanOrEqual(Date.now())
      }))

    it.effect("one-time tokens: one per user and type, replaced with a new id, removed by type and by user", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const oneTimes = yield* OneTimeTokensRepo
        const user = yield* users.insert(newUser())
        const other = yield* users.insert(newUser())
        const row = (type: "confirmation_token" | "recovery_token" | "reauthentication_token", hash: string, seconds: number, userId = user.id) => ({
          id: randomUUID(),
          user_id: userId,
          token_type: type,
          token_hash: hash,
          relates_to: "someone@example.com",
          created_at: new Date(T0.getTime() + seconds * 1000 + 123)
        })
        const first = row("confirmation_token", "c1", 1)
        yield* oneTimes.put(first)
        expect(yield* oneTimes.find(user.id, "confirmation_token")).toEqual(Option.some(first))
        const replacement = row("confirmation_token", "pkce_c2", 2)
        yield* oneTimes.put(replacement)
        expect(yield* oneTimes.find(user.id, "confirmation_token")).toEqual(Option.some(replacement))
        yield* oneTimes.put(row("recovery_token", "r1", 3))
        yield* oneTimes.put(row("reauthentication_token", "n1", 4))
        yield* oneTimes.put(row("recovery_token", "r2", 5, other.id))
        yield* oneTimes.remove(user.id, ["confirmation_token", "reauthentication_token"])
        yield* oneTimes.remove(user.id, [])
        expect(Option.isNone(yield* oneTimes.find(user.id, "confirmation_token"))).toBe(true)
        expect(Option.isNone(yield* oneTimes.find(user.id, "reauthentication_token"))).toBe(true)
        expect(Option.map(yield* oneTimes.find(user.id, "recovery_token"), (found) => found.token_hash)).toEqual(Option.some("r1"))
        yield* oneTimes.removeForUser(user.id)
        expect(Option.isNone(yield* oneTimes.find(user.id, "recovery_token"))).toBe(true)
        expect(Option.map(yield* oneTimes.find(other.id, "recovery_token"), (found) => found.token_hash)).toEqual(Option.some("r2"))
      }))

    it.effect("flow state: found by auth code and as the user's latest per method; taken once", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const flows = yield* FlowStateRepo
        const user = yield* users.insert(newUser())
        const flow = (authCode: string, method: string, seconds: number) => ({
          id: randomUUID(),
          userId: user.id,
          authCode,
          challenge: "c".repeat(43),
          method: "s256" as const,
          authenticationMethod: method,
          now: at(seconds)
        })
        const first = flow(randomUUID(), "email/signup", 1)
        const second = flow(randomUUID(), "email/signup", 2)
        const recovery = flow(randomUUID(), "recovery", 3)
        yield* flows.insert(first)
        yield* flows.insert(second)
        yield* flows.insert(recovery)
        const found = yield* flows.findByAuthCode(first.authCode)
        expect(found).toEqual(Option.some({
          id: first.id,
          user_id: user.id,
          auth_code: first.authCode,
          code_challenge_method: "s256",
          code_challenge: first.challenge,
          authentication_method: "email/signup",
          provider_type: "email",
          provider_access_token: null,
          provider_refresh_token: null,
          created_at: at(1)
        }))
        expect(Option.map(yield* flows.latestFor(user.id, "email/signup"), (f) => f.id)).toEqual(Option.some(second.id))
        expect(Option.map(yield* flows.latestFor(user.id, "recovery"), (f) => f.id)).toEqual(Option.some(recovery.id))
        expect(Option.isNone(yield* flows.latestFor(user.id, "magiclink"))).toBe(true)
        expect(Option.isNone(yield* flows.findByAuthCode(randomUUID()))).toBe(true)
        expect(yield* flows.take(first.id)).toBe(true)
        expect(yield* flows.take(first.id)).toBe(false)
        expect(Option.isNone(yield* flows.findByAuthCode(first.authCode))).toBe(true)
      }))

    it.effect("OAuth flow state: a started flow is claimed once, with its provider verifier; its code flow is exchangeable", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const flows = yield* FlowStateRepo
        const user = yield* users.insert(newUser())
        const implicit = { id: randomUUID(), providerType: "keycloak", pkce: null, referrer: "http://localhost:3000/a", providerCodeVerifier: "v".repeat(43), now: at(1) }
        const authCode = randomUUID()
        const pkce = {
          id: randomUUID(),
          providerType: "github",
          pkce: { challenge: "c".repeat(43), method: "s256" as const, authCode },
          referrer: "http://localhost:3000/b",
          providerCodeVerifier: null,
          linkingTargetId: user.id,
          now: at(2)
        }
        yield* flows.startOAuth(implicit)
        yield* flows.startOAuth(pkce)
        // A started flow is no code an app could exchange.
        expect(Option.isNone(yield* flows.findByAuthCode(authCode))).toBe(true)
        expect(yield* flows.claimOAuth(implicit.id)).toEqual({
          _tag: "Claimed",
          flow: {
            id: implicit.id,
            provider_type: "keycloak",
            auth_code: null,
            code_challenge: null,
            code_challenge_method: null,
            referrer: "http://localhost:3000/a",
            provider_code_verifier: "v".repeat(43),
            linking_target_id: null,
            created_at: at(1)
          }
        })
        expect(yield* flows.claimOAuth(implicit.id)).toEqual({ _tag: "Unknown" })
        const claimed = yield* flows.claimOAuth(pkce.id)
        expect(claimed).toMatchObject({
          _tag: "Claimed",
          flow: { auth_code: authCode, code_challenge_method: "s256", provider_code_verifier: null, linking_target_id: user.id }
        })
        expect(yield* flows.claimOAuth(randomUUID())).toEqual({ _tag: "Unknown" })
        yield* flows.insertOAuthCode({
          id: randomUUID(),
          userId: user.id,
          providerType: "github",
          authCode,
          challenge: "c".repeat(43),
          method: "s256",
          providerAccessToken: "gho_x",
          providerRefreshToken: null,
          createdAt: at(2),
          now: at(3)
        })
        expect(yield* flows.findByAuthCode(authCode)).toEqual(Option.some(expect.objectContaining({
          user_id: user.id,
          authentication_method: "oauth",
          provider_type: "github",
          provider_access_token: "gho_x",
          provider_refresh_token: null,
          created_at: at(2)
        })))
      }))

    it.effect("OAuth flow state bound to a browser: claimed only with its binding; another binding leaves it in place", () =>
      Effect.gen(function*() {
        const flows = yield* FlowStateRepo
        const bound = {
          id: randomUUID(), providerType: "github", pkce: null, referrer: "http://localhost:3000/a", providerCodeVerifier: "v".repeat(43),
          browserBinding: "digest-of-tab-browser", now: at(1)
        }
        yield* flows.startOAuth(bound)
        expect(yield* flows.claimOAuth(bound.id, "digest-of-another-browser")).toEqual({ _tag: "OtherBrowser" })
        // Refused without being spent: its own browser still finishes it, once, with the provider verifier.
        expect(yield* flows.claimOAuth(bound.id, "digest-of-tab-browser")).toMatchObject({
          _tag: "Claimed",
          flow: { id: bound.id, provider_code_verifier: "v".repeat(43) }
        })
        expect(yield* flows.claimOAuth(bound.id, "digest-of-tab-browser")).toEqual({ _tag: "Unknown" })
        // A flow started with binding off binds no browser: unchecked it is claimed, checked it never is.
        const unbound = { id: randomUUID(), providerType: "github", pkce: null, referrer: "http://localhost:3000/b", providerCodeVerifier: null, now: at(1) }
        yield* flows.startOAuth(unbound)
        expect(yield* flows.claimOAuth(unbound.id, "digest-of-tab-browser")).toEqual({ _tag: "OtherBrowser" })
        expect(yield* flows.claimOAuth(unbound.id)).toMatchObject({ _tag: "Claimed", flow: { id: unbound.id } })
        expect(yield* flows.claimOAuth(randomUUID(), "digest-of-tab-browser")).toEqual({ _tag: "Unknown" })
      }))

    it.effect("OAuth flow state waiting for its browser: bound once, to the first browser, and only if it waits", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const flows = yield* FlowStateRepo
        const user = yield* users.insert(newUser())
        const pending = {
          id: randomUUID(), providerType: "github", pkce: null, referrer: "http://localhost:3000/linked", providerCodeVerifier: null,
          linkingTargetId: user.id, pendingAuthorizeUrl: "https://github.example/login/oauth/authorize?state=s", now: at(2)
        }
        yield* flows.startOAuth(pending)
        // Not bound yet: no browser can claim it.
        expect(yield* flows.claimOAuth(pending.id, "digest-first")).toEqual({ _tag: "OtherBrowser" })
        expect(yield* flows.bindPendingOAuth(pending.id, "digest-first")).toEqual(
          Option.some({ authorizeUrl: pending.pendingAuthorizeUrl, createdAt: at(2) })
        )
        expect(yield* flows.bindPendingOAuth(pending.id, "digest-second")).toEqual(Option.none())
        expect(yield* flows.claimOAuth(pending.id, "digest-second")).toEqual({ _tag: "OtherBrowser" })
        expect(yield* flows.claimOAuth(pending.id, "digest-first")).toMatchObject({ _tag: "Claimed", flow: { linking_target_id: user.id } })
        // A flow that waits for nothing (bound at its start, or unbound with binding off) is never bound later.
        const started = { id: randomUUID(), providerType: "github", pkce: null, referrer: "http://localhost:3000/a", providerCodeVerifier: null, now: at(1) }
        yield* flows.startOAuth(started)
        expect(yield* flows.bindPendingOAuth(started.id, "digest-first")).toEqual(Option.none())
        expect(yield* flows.bindPendingOAuth(randomUUID(), "digest-first")).toEqual(Option.none())
      }))

    it.effect("OAuth 1.0a flow state: found by its request token until claimed, with the token secret as its verifier", () =>
      Effect.gen(function*() {
        const flows = yield* FlowStateRepo
        const requestToken = `req-${randomUUID()}`
        const flow = {
          id: randomUUID(),
          providerType: "twitter",
          pkce: null,
          referrer: "http://localhost:3000/t",
          providerCodeVerifier: `oauth_token=${requestToken}&oauth_token_secret=s`,
          providerRequestToken: requestToken,
          now: at(1)
        }
        yield* flows.startOAuth(flow)
        expect(Option.isNone(yield* flows.findOAuthByRequestToken(`req-${randomUUID()}`))).toBe(true)
        expect(yield* flows.findOAuthByRequestToken(requestToken)).toEqual(Option.some(flow.id))
        expect(yield* flows.claimOAuth(flow.id)).toMatchObject({ _tag: "Claimed", flow: { provider_code_verifier: flow.providerCodeVerifier } })
        expect(Option.isNone(yield* flows.findOAuthByRequestToken(requestToken))).toBe(true)
      }))

    it.effect("flow state sweep: the flows and provider verifiers made before its moment go, up to its limit; later ones stay", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const flows = yield* FlowStateRepo
        const user = yield* users.insert(newUser())
        // Before every other case's moments (T0 and after), so the sweeps below count only this case's rows.
        const old = (hours: number) => new Date(T0.getTime() - hours * 3_600_000)
        const emailFlow = (now: Date) => ({
          id: randomUUID(), userId: user.id, authCode: randomUUID(), challenge: "c".repeat(43), method: "s256" as const,
          authenticationMethod: "email/signup", now
        })
        const start = (now: Date, verifier: string | null, requestToken: string | null = null) => ({
          id: randomUUID(), providerType: "github", pkce: null, referrer: "http://localhost:3000/a", providerCodeVerifier: verifier,
          providerRequestToken: requestToken, now
        })
        const staleEmail = emailFlow(old(50))
        const staleWithVerifier = start(old(49), "v".repeat(43))
        const staleOAuth1 = start(old(49), "oauth_token_secret=s", `req-${randomUUID()}`)
        const staleImplicit = start(old(48), null)
        const staleCode = {
          id: randomUUID(), userId: user.id, providerType: "github", authCode: randomUUID(), challenge: "c".repeat(43), method: "s256" as const,
          providerAccessToken: "gho_x", providerRefreshToken: null, createdAt: old(48), now: old(47)
        }
        const freshEmail = emailFlow(old(1))
        const freshStart = start(old(1), "w".repeat(43))
        yield* flows.insert(staleEmail)
        yield* flows.startOAuth(staleWithVerifier)
        yield* flows.startOAuth(staleOAuth1)
        yield* flows.startOAuth(staleImplicit)
        yield* flows.insertOAuthCode(staleCode)
        yield* flows.insert(freshEmail)
        yield* flows.startOAuth(freshStart)

        // Nothing was made before 51 hours ago.
        expect(yield* flows.sweep(old(51), 100)).toEqual({ flows: 0, clientStates: 0 })
        // A limit of one: one email flow, the older.
        expect(yield* flows.sweep(old(49.5), 1)).toEqual({ flows: 1, clientStates: 0 })
        expect(Option.isNone(yield* flows.findByAuthCode(staleEmail.authCode))).toBe(true)
        // Everything made before 24 hours ago: four flows, two with client states (a verifier, a request token).
        expect(yield* flows.sweep(old(24), 100)).toEqual({ flows: 4, clientStates: 2 })
        expect(yield* flows.claimOAuth(staleWithVerifier.id)).toEqual({ _tag: "Unknown" })
        expect(yield* flows.claimOAuth(staleImplicit.id)).toEqual({ _tag: "Unknown" })
        expect(Option.isNone(yield* flows.findOAuthByRequestToken(staleOAuth1.providerRequestToken!))).toBe(true)
        expect(Option.isNone(yield* flows.findByAuthCode(staleCode.authCode))).toBe(true)
        expect(yield* flows.sweep(old(24), 100)).toEqual({ flows: 0, clientStates: 0 })
        // The flows of the last day are untouched: still exchangeable, still claimed with their verifier.
        expect(Option.map(yield* flows.findByAuthCode(freshEmail.authCode), (flow) => flow.id)).toEqual(Option.some(freshEmail.id))
        expect(yield* flows.claimOAuth(freshStart.id)).toMatchObject({ _tag: "Claimed", flow: { provider_code_verifier: "w".repeat(43) } })
      }))

    // The counters are one row per channel for the whole database: each case starts with a window none before used.
    it.effect("send quotas: `limit` claims per window and channel; a new window starts over; a lagging window counts against the newer", () =>
      Effect.gen(function*() {
        const quotas = yield* SendQuotaRepo
        const claims = (channel: "email" | "sms", start: Date, limit: number, n: number) =>
          Effect.forEach(Array.from({ length: n }), () => quotas.claim(channel, start, limit))
        expect(yield* claims("email", at(1000), 2, 3)).toEqual([true, true, false])
        expect(yield* claims("sms", at(1000), 1, 2)).toEqual([true, false])
        expect(yield* claims("email", at(2000), 2, 3)).toEqual([true, true, false])
        // An instance whose clock is behind still sees the newer window's count, and cannot reopen it.
        expect(yield* claims("email", at(1000), 5, 4)).toEqual([true, true, true, false])
        expect(yield* claims("email", at(3000), 0, 1)).toEqual([false])
      }))

    it.effect("send quotas: a give-back frees one unit of its own window only", () =>
      Effect.gen(function*() {
        const quotas = yield* SendQuotaRepo
        expect(yield* quotas.claim("email", at(5000), 1)).toBe(true)
        expect(yield* quotas.claim("email", at(5000), 1)).toBe(false)
        yield* quotas.giveBack("email", at(5000))
        expect(yield* quotas.claim("email", at(5000), 1)).toBe(true)
        // The sms counter and an ended window are untouched by give-backs that are not theirs.
        yield* quotas.giveBack("sms", at(5000))
        expect(yield* quotas.claim("sms", at(5000), 1)).toBe(true)
        yield* quotas.giveBack("email", at(4000))
        expect(yield* quotas.claim("email", at(5000), 1)).toBe(false)
      }))

    it.effect("send quotas: concurrent claims never overshoot the limit", () =>
      Effect.gen(function*() {
        const quotas = yield* SendQuotaRepo
        const granted = yield* Effect.forEach(Array.from({ length: 24 }), () => quotas.claim("sms", at(9000), 7), { concurrency: "unbounded" })
        expect(granted.filter(Boolean)).toHaveLength(7)
      }))

    // Recipients are this run's own (the table is shared with every other case on the database).
    it.effect("recipient sends: `limit` in any period per channel and recipient; the wait is exact; a refusal changes nothing", () =>
      Effect.gen(function*() {
        const recipients = yield* RecipientSendsRepo
        const who = `r-${randomUUID()}`
        const rule = { limit: 2, periodMs: 10_000 }
        const t0 = T0.getTime()
        const claim = (ms: number, channel: "email" | "sms" = "email", key = who) => recipients.claim(channel, key, t0 + ms, rule)
        expect(yield* claim(0)).toEqual({ allowed: true, sent: [t0] })
        expect(yield* claim(4_000)).toEqual({ allowed: true, sent: [t0, t0 + 4_000] })
        expect(yield* claim(5_000)).toEqual({ allowed: false, retryAfterMs: 5_000 })
        // Another channel, another recipient: windows of their own.
        expect((yield* claim(5_000, "sms")).allowed).toBe(true)
        expect((yield* claim(5_000, "email", `${who}-other`)).allowed).toBe(true)
        expect((yield* claim(9_999)).allowed).toBe(false)
        // The first send ages out at 10s: one slot, and the row keeps only the live times.
        expect(yield* claim(10_000)).toEqual({ allowed: true, sent: [t0 + 4_000, t0 + 10_000] })
        // A clock behind the one that wrote the row counts those times too, and only waits longer.
        expect(yield* claim(3_000)).toEqual({ allowed: false, retryAfterMs: 11_000 })
        expect(yield* recipients.claim("email", who, t0, { limit: 0, periodMs: 10_000 })).toEqual({ allowed: false, retryAfterMs: 10_000 })
      }))

    it.effect("recipient sends: a give-back frees the slot of its own send only; a sweep deletes exactly the aged-out rows", () =>
      Effect.gen(function*() {
        const recipients = yield* RecipientSendsRepo
        const who = `g-${randomUUID()}`
        // Far past every other case's moments, so the sweeps below count only this case's rows.
        const base = at(500_000_000).getTime()
        const rule = { limit: 1, periodMs: 10_000 }
        expect((yield* recipients.claim("sms", who, base, rule)).allowed).toBe(true)
        expect((yield* recipients.claim("sms", who, base + 1, rule)).allowed).toBe(false)
        yield* recipients.giveBack("sms", who, base + 1)
        yield* recipients.giveBack("email", who, base)
        expect((yield* recipients.claim("sms", who, base + 2, rule)).allowed).toBe(false)
        yield* recipients.giveBack("sms", who, base)
        expect(yield* recipients.claim("sms", who, base + 3, rule)).toEqual({ allowed: true, sent: [base + 3] })
        expect((yield* recipients.claim("email", who, base + 5_000, rule)).allowed).toBe(true)
        const all = 1_000_000
        yield* recipients.sweep(base, all)
        expect(yield* recipients.sweep(base + 10_002, all)).toBe(0)
        expect(yield* recipients.sweep(base + 10_003, all)).toBe(1)
        expect(yield* recipients.sweep(base + 14_999, all)).toBe(0)
        expect((yield* recipients.claim("email", who, base + 14_999, rule)).allowed).toBe(false)
        expect(yield* recipients.sweep(base + 15_000, all)).toBe(1)
        expect(yield* recipients.claim("email", who, base + 15_000, rule)).toEqual({ allowed: true, sent: [base + 15_000] })
      }))

    it.effect("recipient sends: concurrent claims never exceed the limit", () =>
      Effect.gen(function*() {
        const recipients = yield* RecipientSendsRepo
        const who = `race-${randomUUID()}`
        const sent = yield* Effect.forEach(Array.from({ length: 24 }), (_, i) => recipients.claim("email", who, T0.getTime() + i, { limit: 7, periodMs: 60_000 }), {
          concurrency: "unbounded"
        })
        expect(sent.filter((send) => send.allowed)).toHaveLength(7)
      }))

    // Routes and keys are this run's own (the table is shared with every other case on the database).
    it.effect("rate limits: a burst, then one request an interval; each route and key its own bucket; the wait is exact", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimitsRepo
        const key = `203.0.113.${randomUUID()}`
        const rate = requestRate(1, Duration.seconds(10), 2)
        const t0 = T0.getTime()
        const admit = (route: string, ms: number, who = key) => limits.admit(route, who, t0 + ms, rate)
        expect(yield* admit("token", 0)).toEqual({ allowed: true, tat: t0 + 10_000 })
        expect(yield* admit("token", 0)).toEqual({ allowed: true, tat: t0 + 20_000 })
        expect(yield* admit("token", 500)).toEqual({ allowed: false, retryAfterMs: 9_500 })
        // Another route, another client: full buckets of their own.
        expect((yield* admit("verify", 500)).allowed).toBe(true)
        expect((yield* admit("token", 500, `${key}-other`)).allowed).toBe(true)
        // The refusal changed nothing: its wait, to the millisecond, is the wait.
        expect((yield* admit("token", 9_999)).allowed).toBe(false)
        expect(yield* admit("token", 10_000)).toEqual({ allowed: true, tat: t0 + 30_000 })
        // A clock behind the one that wrote the row only waits longer.
        expect(yield* admit("token", 1_000)).toEqual({ allowed: false, retryAfterMs: 19_000 })
      }))

    it.effect("rate limits: a shut rate refuses without a row; a sweep deletes exactly the refilled buckets", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimitsRepo
        const key = `sweep-${randomUUID()}`
        const shut = requestRate(0, Duration.minutes(5), 30)
        expect(yield* limits.admit("otp", key, 0, shut)).toEqual({ allowed: false, retryAfterMs: 300_000 })
        // Far past every other case's moments, so the sweeps below count only this case's rows.
        const base = at(400_000_000).getTime()
        const rate = requestRate(1, Duration.seconds(10), 1)
        expect((yield* limits.admit("otp", key, base, rate)).allowed).toBe(true)
        expect((yield* limits.admit("recover", key, base + 5_000, rate)).allowed).toBe(true)
        const all = 1_000_000
        yield* limits.sweep(base, all)
        expect(yield* limits.sweep(base + 10_000, all)).toBe(1)
        expect(yield* limits.sweep(base + 14_999, all)).toBe(0)
        expect((yield* limits.admit("recover", key, base + 14_999, rate)).allowed).toBe(false)
        expect(yield* limits.sweep(base + 15_000, all)).toBe(1)
        expect((yield* limits.admit("recover", key, base + 15_000, rate)).allowed).toBe(true)
      }))

    it.effect("rate limits: concurrent requests never overdraw a bucket", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimitsRepo
        const key = `race-${randomUUID()}`
        const rate: RequestRate = requestRate(1, Duration.minutes(5), 7)
        const admitted = yield* Effect.forEach(Array.from({ length: 24 }), () => limits.admit("token", key, T0.getTime(), rate), {
          concurrency: "unbounded"
        })
        expect(admitted.filter((admission) => admission.allowed)).toHaveLength(7)
      }))

    it.effect("audit log: pages newest first (ties by id), counts what matches, and filters author, action and type", () =>
      Effect.gen(function*() {
        const audit = yield* AuditLogRepo
        // The table is shared with every other test on the database: each query is scoped by this run's tag.
        const tag = randomUUID().slice(0, 8)
        const entry = (id: string, username: string, action: string, logType: string, seconds: number, name?: string) => ({
          id,
          payload: {
            actor_id: randomUUID(),
            actor_username: username,
            ...(name === undefined ? {} : { actor_name: name }),
            actor_via_sso: false,
            action,
            log_type: logType,
            traits: { provider: "email" }
          },
          createdAt: at(seconds),
          ipAddress: ""
        })
        const [a, b, c, d] = ["1", "2", "3", "4"].map((n) => `0190000${n}-0000-7000-8000-${tag}0000`)
        const first = entry(a!, `x_${tag}@example.com`, "user_signedup", "team", 1)
        yield* audit.insert([first])
        yield* audit.insert([entry(b!, `xy${tag}@example.com`, "login", "account", 2, `Full ${tag}`)])
        // Two entries in one statement, as a token rotation writes them.
        yield* audit.insert([entry(c!, `xy${tag}@example.com`, "token_refreshed", "token", 2), entry(d!, `+1555${tag}`, "logout", "account", 3)])
        const ids = (page: { readonly entries: ReadonlyArray<{ readonly id: string }> }) => page.entries.map((e) => e.id)
        const all = yield* audit.page(1, 50, { field: "author", value: tag.toUpperCase() })
        expect([ids(all), all.total]).toEqual([[d, c, b, a], 4])
        expect(all.entries[3]).toEqual({ id: a, payload: first.payload, created_at: at(1), ip_address: "" })
        const second = yield* audit.page(2, 3, { field: "author", value: tag })
        expect([ids(second), second.total]).toEqual([[a], 4])
        expect(yield* audit.page(3, 3, { field: "author", value: tag })).toEqual({ entries: [], total: 4 })
        // LIKE's wildcards are literal: "_" matches an underscore, not any character.
        expect(ids(yield* audit.page(1, 50, { field: "author", value: `_${tag}` }))).toEqual([a])
        // author is the username or the name.
        expect(ids(yield* audit.page(1, 50, { field: "author", value: `full ${tag}` }))).toEqual([b])
        const logins = yield* audit.page(1, 50, { field: "action", value: "login" })
        expect(ids(logins).filter((id) => id.endsWith(`${tag}0000`))).toEqual([b])
        const tokens = yield* audit.page(1, 50, { field: "type", value: "TOKEN" })
        expect(ids(tokens).filter((id) => id.endsWith(`${tag}0000`))).toEqual([c])
        const everything = yield* audit.page(1, 1, undefined)
        expect(everything.total).toBeGreaterThanOrEqual(4)
        expect(everything.entries).toHaveLength(1)
      }))

    it.effect("identities: updateData replaces the claims and the email derived from them", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const identities = yield* IdentitiesRepo
        const user = yield* users.insert(newUser())
        const id = randomUUID()
        yield* identities.insert({ id, provider_id: user.id, user_id: user.id, identity_data: { email: "a@example.com" }, provider: "email", now: at(1) })
        yield* identities.updateData(id, { email: "B@Example.com", email_verified: true }, at(2))
        const [row] = yield* identities.forUser(user.id)
        expect([row!.identity_data, row!.email, row!.updated_at]).toEqual([{ email: "B@Example.com", email_verified: true }, "b@example.com", at(2)])
      }))

    it.effect("identities: findByProvider, signedIn refreshes claims and time, removeOthers keeps one", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const identities = yield* IdentitiesRepo
        const user = yield* users.insert(newUser())
        const subject = `sub-${randomUUID()}`
        const keep = randomUUID()
        yield* identities.insert({ id: randomUUID(), provider_id: user.id, user_id: user.id, identity_data: {}, provider: "email", now: at(1) })
        yield* identities.insert({ id: keep, provider_id: subject, user_id: user.id, identity_data: { email: "x@example.com" }, provider: "google", now: at(1) })
        expect(Option.map(yield* identities.findByProvider("google", subject), (r) => r.id)).toEqual(Option.some(keep))
        expect(Option.isNone(yield* identities.findByProvider("apple", subject))).toBe(true)
        yield* identities.signedIn(keep, { email: "Y@Example.com", name: "n" }, at(4))
        const found = Option.getOrThrow(yield* identities.findByProvider("google", subject))
        expect([found.identity_data, found.email, found.last_sign_in_at, found.updated_at, found.created_at])
          .toEqual([{ email: "Y@Example.com", name: "n" }, "y@example.com", at(4), at(4), at(1)])
        yield* identities.removeOthers(user.id, keep)
        expect((yield* identities.forUser(user.id)).map((r) => r.id)).toEqual([keep])
      }))

    it.effect("identities: remove deletes that one identity only", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const identities = yield* IdentitiesRepo
        const user = yield* users.insert(newUser())
        const [first, second] = [randomUUID(), randomUUID()]
        yield* identities.insert({ id: first, provider_id: user.id, user_id: user.id, identity_data: {}, provider: "email", now: at(1) })
        yield* identities.insert({ id: second, provider_id: `gh-${randomUUID()}`, user_id: user.id, identity_data: {}, provider: "github", now: at(2) })
        yield* identities.remove(second)
        yield* identities.remove(randomUUID())
        expect((yield* identities.forUser(user.id)).map((r) => r.id)).toEqual([first])
      }))

    it.effect("identities: a user's, oldest first, with the email lower-cased from identity_data", () =>
      Effect.gen(function*() {
        const users = yield* UsersRepo
        const identities = yield* IdentitiesRepo
        const user = yield* users.insert(newUser())
        yield* identities.insert({
          id: randomUUID(), provider_id: user.id, user_id: user.id, identity_data: { email: "Later@Example.com" }, provider: "email", now: at(5)
        })
        yield* identities.insert({
          id: randomUUID(), provider_id: "+15550001", user_id: user.id, identity_data: { phone: "15550001" }, provider: "phone", now: at(1)
        })
        const rows = yield* identities.forUser(user.id)
        expect(rows.map((r) => [r.provider, r.email, r.last_sign_in_at])).toEqual([["phone", null, at(1)], ["email", "later@example.com", at(5)]])
        expect(yield* identities.forUser(randomUUID())).toEqual([])
      }))

    it.effect("sessions: signedIn stamps the user; findForSession tells whether the session is the user's; both bring its identities", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const identities = yield* IdentitiesRepo
        const { sessionId, user } = yield* withSession
        yield* identities.insert({
          id: randomUUID(), provider_id: "+15550002", user_id: user.id, identity_data: { phone: "15550002" }, provider: "phone", now: at(2)
        })
        yield* identities.insert({
          id: randomUUID(), provider_id: user.id, user_id: user.id, identity_data: { email: "Id@Example.com", n: [1, { x: null }] }, provider: "email", now: at(1)
        })
        const expected = yield* identities.forUser(user.id)
        expect(expected.map((row) => row.provider)).toEqual(["email", "phone"])
        const signedIn = yield* sessions.signedIn(user.id, at(3))
        expect([signedIn.user.last_sign_in_at, signedIn.user.updated_at]).toEqual([at(3), at(3)])
        expect(signedIn.identities).toEqual(expected)
        const found = yield* sessions.findForSession(user.id, sessionId)
        expect(Option.map(found, (f) => [f.user.id, f.sessionExists])).toEqual(Option.some([user.id, true]))
        expect(Option.map(found, (f) => f.identities)).toEqual(Option.some(expected))
        const other = yield* withSession
        expect(Option.map(yield* sessions.findForSession(user.id, other.sessionId), (f) => f.sessionExists)).toEqual(Option.some(false))
        expect(Option.map(yield* sessions.findForSession(user.id, undefined), (f) => f.sessionExists)).toEqual(Option.some(true))
        expect(Option.isNone(yield* sessions.findForSession(randomUUID(), sessionId))).toBe(true)
        expect(Option.map(yield* sessions.lockForRefresh(sessionId), (s) => s.not_after)).toEqual(Option.some(null))
        const lonely = yield* withSession
        expect(Option.map(yield* sessions.findForSession(lonely.user.id, undefined), (f) => f.identities)).toEqual(Option.some([]))
      }))

    it.effect("sessions: refreshed adds no claim and answers the claims as they are, newest first", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const { sessionId } = yield* withSession
        const seconds = (s: number) => Math.floor(at(s).getTime() / 1000)
        yield* sessions.addAmr(sessionId, "password", at(5))
        expect(yield* sessions.refreshed(sessionId, at(3))).toEqual([{ method: "password", timestamp: seconds(5) }])
        const again = yield* sessions.refreshed(sessionId, at(7))
        expect(again).toEqual([{ method: "password", timestamp: seconds(5) }])
        expect(yield* sessions.amr(sessionId)).toEqual(again)
      }))

    it.effect("sessions: a step-up adds the factor's claim and raises the row; a factor's removal lowers only what it raised", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const a = yield* withSession
        const b = { sessionId: randomUUID() }
        yield* sessions.insert({ id: b.sessionId, userId: a.user.id, now: at(0) })
        const seconds = (s: number) => Math.floor(at(s).getTime() / 1000)
        yield* sessions.addAmr(a.sessionId, "password", at(1))
        yield* sessions.addAmr(b.sessionId, "password", at(1))
        const totp = randomUUID()
        const phone = randomUUID()
        expect(yield* sessions.stepUp(a.sessionId, "totp", totp, at(4))).toEqual([
          { method: "totp", timestamp: seconds(4) },
          { method: "password", timestamp: seconds(1) }
        ])
        yield* sessions.stepUp(b.sessionId, "mfa/phone", phone, at(5))
        const level = (id: string) => Effect.map(sessions.findForSession(a.user.id, id), Option.map((f) => f.session))
        expect(yield* level(a.sessionId)).toEqual(Option.some({ aal: "aal2", factorId: totp }))
        yield* sessions.downgradeForFactor(totp, "totp", at(6))
        expect(yield* level(a.sessionId)).toEqual(Option.some({ aal: "aal1", factorId: null }))
        expect(yield* sessions.amr(a.sessionId)).toEqual([{ method: "password", timestamp: seconds(1) }])
        expect(yield* level(b.sessionId)).toEqual(Option.some({ aal: "aal2", factorId: phone }))
        // Below aal2 now, a is ended by the next step-up's sweep; b stays.
        yield* sessions.deleteBelowAal2(a.user.id)
        expect(Option.map(yield* sessions.findForSession(a.user.id, a.sessionId), (f) => f.sessionExists)).toEqual(Option.some(false))
        expect(Option.map(yield* sessions.findForSession(a.user.id, b.sessionId), (f) => f.sessionExists)).toEqual(Option.some(true))
      }))

    it.effect("sessions: an amr claim is renewed, not repeated; the newest comes first", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const { sessionId } = yield* withSession
        yield* sessions.addAmr(sessionId, "password", at(1))
        yield* sessions.addAmr(sessionId, "otp", at(2))
        yield* sessions.addAmr(sessionId, "password", at(3))
        const seconds = (s: number) => Math.floor(at(s).getTime() / 1000)
        expect(yield* sessions.amr(sessionId)).toEqual([
          { method: "password", timestamp: seconds(3) },
          { method: "otp", timestamp: seconds(2) }
        ])
      }))

    it.effect("sessions: deleting one, all but one, or all of a user's sessions takes their tokens and claims along", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const tokens = yield* RefreshTokensRepo
        const a = yield* withSession
        const addSession = Effect.gen(function*() {
          const id = randomUUID()
          yield* sessions.insert({ id, userId: a.user.id, now: at(0) })
          const digest = `d-${randomUUID()}`
          yield* tokens.insert({ id: yield* tokens.nextId(), digest, userId: a.user.id, parent: null, sessionId: id, now: at(0) })
          yield* sessions.addAmr(id, "password", at(0))
          return { id, digest }
        })
        const b = yield* addSession
        const c = yield* addSession
        const stranger = yield* withSession
        const alive = (id: string) => Effect.map(sessions.lockForRefresh(id), Option.isSome)

        yield* sessions.deleteForUser(stranger.user.id, { only: b.id })
        expect(yield* alive(b.id)).toBe(true)
        yield* sessions.deleteForUser(a.user.id, { only: b.id })
        expect([yield* alive(a.sessionId), yield* alive(b.id), yield* alive(c.id)]).toEqual([true, false, true])
        expect(Option.isNone(yield* tokens.lockSessionOf(b.digest))).toBe(true)
        expect(yield* sessions.amr(b.id)).toEqual([])

        yield* sessions.deleteForUser(a.user.id, { except: c.id })
        expect([yield* alive(a.sessionId), yield* alive(c.id)]).toEqual([false, true])
        expect(Option.isNone(yield* tokens.lock(a.digest))).toBe(true)

        yield* sessions.deleteForUser(a.user.id, "all")
        expect(yield* alive(c.id)).toBe(false)
        expect(Option.isNone(yield* tokens.lockForExchange(c.digest))).toBe(true)
        expect(yield* alive(stranger.sessionId)).toBe(true)
      }))

    it.effect("outbox: keeps each message as given, newest first, and only the newest `capacity`", () =>
      Effect.gen(function*() {
        const outbox = yield* OutboxRepo
        const mail: OutboxRow = {
          sent_at: at(10),
          channel: "email",
          recipient: "kept@example.com",
          subject: "Confirm Your Signup",
          html: "<p>123456</p>",
          body: "Code: 123456",
          type: "signup",
          code: "123456",
          link: "http://localhost:9999/verify?token=t&type=signup",
          user_id: randomUUID(),
          token_column: "confirmation_token",
          code_hash: "pkce_abc"
        }
        const text: OutboxRow = {
          sent_at: at(10),
          channel: "sms",
          recipient: "15550001111",
          subject: null,
          html: null,
          body: "Your code is 654321",
          type: null,
          code: null,
          link: null,
          user_id: null,
          token_column: null,
          code_hash: null
        }
        yield* outbox.add(mail, 3)
        yield* outbox.add(text, 3)
        expect(yield* outbox.list).toEqual([text, mail])
        const numbered = (n: number): OutboxRow => ({ ...text, recipient: `1555000${n}`, sent_at: at(11) })
        for (const n of [1, 2, 3]) yield* outbox.add(numbered(n), 3)
        expect(yield* outbox.list).toEqual([numbered(3), numbered(2), numbered(1)])
      }))

    it.effect("refresh tokens: ids increase; the current token is the newest unrevoked one", () =>
      Effect.gen(function*() {
        const tokens = yield* RefreshTokensRepo
        const { digest, sessionId, tokenId, user } = yield* withSession
        expect(yield* tokens.lockSessionOf(digest)).toEqual(
          Option.some({ session_id: sessionId, session: Option.some({ id: sessionId, not_after: null, signed_key: null, moved_on: false, oauth_client_id: null, scopes: null }) })
        )
        const locked = yield* tokens.lock(digest)
        expect(Option.map(locked, (r) => [r.id, r.token, r.user_id, r.revoked, r.session_id])).toEqual(
          Option.some([tokenId, digest, user.id, false, sessionId])
        )
        const childId = yield* tokens.nextId()
        expect(Number(childId)).toBeGreaterThan(Number(tokenId))
        yield* tokens.insert({ id: childId, digest: `${digest}-c`, userId: user.id, parent: digest, sessionId, now: at(4) })
        const currentOf = (presented: string) => Effect.map(tokens.lockForExchange(presented), Option.flatMap((read) => read.current))
        expect(yield* currentOf(digest)).toEqual(Option.some({ id: childId, token: `${digest}-c`, parent: digest }))
        yield* tokens.remove(childId)
        // The root, never revoked, is again the session's newest live token.
        expect(yield* currentOf(digest)).toEqual(Option.some({ id: tokenId, token: digest, parent: null }))
        expect(Option.isNone(yield* tokens.lockSessionOf(`${digest}-c`))).toBe(true)
        expect(Option.isNone(yield* tokens.lockSessionOf("no-such-digest"))).toBe(true)
      }))

    it.effect("sessions: read for a GoTrue signed token, a session Gatehouse started has no key; a signed exchange sets its counter", () =>
      Effect.gen(function*() {
        const sessions = yield* SessionsRepo
        const tokens = yield* RefreshTokensRepo
        const { digest, sessionId, tokenId, user } = yield* withSession
        expect(yield* sessions.lockSigned(sessionId)).toEqual(Option.some({
          id: sessionId,
          user_id: user.id,
          not_after: null,
          refresh_token_hmac_key: null,
          refresh_token_counter: null,
          created_at: at(0),
          refreshed_at: at(0),
          oauth_client_id: null,
          scopes: null
        }))
        yield* sessions.refreshed(sessionId, at(5), 7n)
        expect(Option.map(yield* sessions.lockSigned(sessionId), (row) => [row.refresh_token_counter, row.refreshed_at])).toEqual(Option.some([7n, at(5)]))
        yield* sessions.refreshed(sessionId, at(6))
        expect(Option.map(yield* sessions.lockSigned(sessionId), (row) => [row.refresh_token_counter, row.refreshed_at])).toEqual(Option.some([7n, at(6)]))
        expect(Option.isNone(yield* sessions.lockSigned(randomUUID()))).toBe(true)

        const latest = yield* tokens.latestOf(sessionId)
        expect(latest.current).toEqual(Option.some({ id: tokenId, token: digest, parent: null }))
        expect(Number(latest.nextId)).toBeGreaterThan(Number(tokenId))
        const none = yield* tokens.latestOf(randomUUID())
        expect(none.current).toEqual(Option.none())
        expect(Number(none.nextId)).toBeGreaterThan(Number(latest.nextId))
      }))

    it.effect("refresh tokens: an exchange's read locks the token and names the current token and a fresh id; rotate revokes and adds", () =>
      Effect.gen(function*() {
        const tokens = yield* RefreshTokensRepo
        const { digest, sessionId, tokenId, user } = yield* withSession
        const read = Option.getOrThrow(yield* tokens.lockForExchange(digest))
        expect([read.row.id, read.row.token, read.row.user_id, read.row.revoked, read.row.session_id]).toEqual([tokenId, digest, user.id, false, sessionId])
        expect(read.current).toEqual(Option.some({ id: tokenId, token: digest, parent: null }))
        expect(Number(read.nextId)).toBeGreaterThan(Number(tokenId))
        yield* tokens.rotate(tokenId, { id: read.nextId, digest: `${digest}-c`, userId: user.id, parent: digest, sessionId, now: at(6) })
        expect(Option.map(yield* tokens.lock(digest), (r) => [r.revoked, r.updated_at])).toEqual(Option.some([true, at(6)]))
        const child = Option.getOrThrow(yield* tokens.lockForExchange(`${digest}-c`))
        expect([child.row.id, child.row.revoked, child.current]).toEqual([read.nextId, false, Option.some({ id: read.nextId, token: `${digest}-c`, parent: digest })])
        expect(Number(child.nextId)).toBeGreaterThan(Number(read.nextId))
        expect(Option.isNone(yield* tokens.lockForExchange("no-such-digest"))).toBe(true)
      }))
  })

describe("auth repos", () => {
  contract("Live repos on the database", LiveRepos)
  contract("in-memory Test repos", MemoryRepos())
})

/*
 * What makes the quotas instance-wide: two SendQuotaRepo instances, each built on its own (Layer.fresh: nothing
 * shared but the database they are given), as two servers' would be, spend one counter between them.
 */
layer(MigratedDatabase, { timeout: 60_000 })("rate limits across instances", (it) => {
  it.scoped("two rate-limit repo instances over one database draw on one bucket per client, even racing", () =>
    Effect.gen(function*() {
      const instance = Effect.map(Layer.build(Layer.fresh(RateLimitsRepo.Default)), (context) => Context.get(context, RateLimitsRepo))
      const a = yield* instance
      const b = yield* instance
      expect(a).not.toBe(b)
      const key = `shared-${randomUUID()}`
      const rate = requestRate(1, Duration.minutes(1), 5)
      const now = T0.getTime()
      expect((yield* a.admit("token", key, now, rate)).allowed).toBe(true)
      expect((yield* b.admit("token", key, now, rate)).allowed).toBe(true)
      const raced = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b)),
        (repo) => repo.admit("token", key, now, rate),
        { concurrency: "unbounded" }
      )
      expect(raced.filter((admission) => admission.allowed)).toHaveLength(3)
      expect(yield* a.admit("token", key, now, rate)).toEqual({ allowed: false, retryAfterMs: 60_000 })
    }))
})

layer(MigratedDatabase, { timeout: 60_000 })("recipient sends across instances", (it) => {
  it.scoped("two repo instances over one database share each recipient's window, even racing", () =>
    Effect.gen(function*() {
      const instance = Effect.map(Layer.build(Layer.fresh(RecipientSendsRepo.Default)), (context) => Context.get(context, RecipientSendsRepo))
      const a = yield* instance
      const b = yield* instance
      expect(a).not.toBe(b)
      const who = `shared-${randomUUID()}`
      const rule = { limit: 5, periodMs: 60_000 }
      const now = T0.getTime()
      expect((yield* a.claim("email", who, now, rule)).allowed).toBe(true)
      expect((yield* b.claim("email", who, now + 1, rule)).allowed).toBe(true)
      const raced = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b)),
        (repo, i) => repo.claim("email", who, now + 2 + i, rule),
        { concurrency: "unbounded" }
      )
      expect(raced.filter((send) => send.allowed)).toHaveLength(3)
      expect(yield* a.claim("email", who, now + 100, rule)).toEqual({ allowed: false, retryAfterMs: 59_900 })
    }))
})

layer(MigratedDatabase, { timeout: 60_000 })("send quotas across instances", (it) => {

  it.scoped("two repo instances over one database share each window's count, even racing", () =>
    Effect.gen(function*() {
      const instance = Effect.map(Layer.build(Layer.fresh(SendQuotaRepo.Default)), (context) => Context.get(context, SendQuotaRepo))
      const a = yield* instance
      const b = yield* instance
      expect(a).not.toBe(b)
      expect(yield* a.claim("email", at(20_000), 3)).toBe(true)
      expect(yield* b.claim("email", at(20_000), 3)).toBe(true)
      yield* a.giveBack("email", at(20_000))
      const raced = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b)),
        (repo) => repo.claim("email", at(20_000), 3),
        { concurrency: "unbounded" }
      )
      expect(raced.filter(Boolean)).toHaveLength(2)
      expect(yield* b.claim("email", at(20_000), 3)).toBe(false)
    }))
})
