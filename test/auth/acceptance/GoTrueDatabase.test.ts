/**
 * Gatehouse taking over a database real Supabase Auth (GoTrue v2.196.0) made and used (shared/fixtures/gotrue-v2.196):
 * its migrations run over GoTrue's `auth` schema, and the users, passwords, tokens and codes GoTrue left keep working.
 *
 * PostgreSQL only: the dump can be loaded only by psql (pg_dump 15 writes `\restrict` meta-commands), which PGlite,
 * the embedded default, cannot run. Without DATABASE_URL the file is skipped.
 */
import { randomInt, randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import type { AuthError as ClientError, GoTrueClient } from "@supabase/auth-js"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import * as bcrypt from "@node-rs/bcrypt"
import { Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as OTPAuth from "otpauth"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate, readMigrations } from "../../../src/platform/sql/Migrator.js"
import { isGatehouseRefreshToken } from "../../support/GatehouseTokens.js"
import {
  gotrueFixtureMissing,
  gotrueManifest,
  loadGoTrueFixture,
  moveSentAtForward,
  pendingState,
  SENT_BEFORE_SWITCH,
  setEncryptedPassword,
  writePendingEmailChange
} from "../../support/GoTrueFixture.js"
import { projectClient, projectKey } from "../../support/SupabaseJs.js"
import { browser } from "../support/Browser.js"
import { GITHUB_CODE, GITHUB_REDIRECT_URI, githubEnv, octocat, startGitHubFake } from "../support/GitHubFake.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import {
  authClient,
  call,
  codeIn,
  decodeJwt,
  legacyError,
  mailTo,
  nowSeconds,
  PASSWORD,
  raw,
  settledMail,
  signHs256,
  uniqueEmail
} from "./AcceptanceKit.js"

const manifest = gotrueManifest

const ENV = {
  // GoTrue's access tokens in the manifest are signed with this; Gatehouse's are too from here on.
  AUTH_JWT_SECRET: manifest?.jwt_secret ?? "",
  // So that a new sign-up comes back with a session, written beside GoTrue's.
  AUTH_MAILER_AUTOCONFIRM: "true",
  // As the fixture's GoTrue ran: phone_user signed up with a phone and password.
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  // The identities routes (GET /user/identities/authorize, DELETE /user/identities/{id}) exist only with it, in both.
  AUTH_SECURITY_MANUAL_LINKING_ENABLED: "true"
}

/** The fixture's database, for what a test does to its rows directly. */
class FixtureUrl extends Context.Tag("test/FixtureUrl")<FixtureUrl, string>() {}

/** The fixture loaded into a database of its own, Gatehouse's migrations run over it, and a server on it. */
const overGoTrueDatabase = (env: Readonly<Record<string, string>>) =>
  Layer.unwrapScoped(
    Effect.map(loadGoTrueFixture(Option.getOrElse(externalDatabaseUrl, () => "")), ({ url }) => {
      const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(env).db.namespace })))
      return TestServerOver(env).pipe(
        Layer.provideMerge(Migrated),
        Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
        Layer.provideMerge(Layer.succeed(FixtureUrl, url))
      )
    })
  ).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

/** GitHub, for linking an identity to a user GoTrue made. */
const github = await startGitHubFake()
afterAll(() => github.close())

const OverGoTrueDatabase = overGoTrueDatabase({ ...ENV, ...githubEnv(github) })

/**
 * The settings GoTrue made the fixture's links under: mails confirmed by their links (so an email change waits for
 * both halves, as GoTrue's emailChangeVerify does only without MAILER_AUTOCONFIRM), and the action links'
 * redirect_to (http://127.0.0.1:3000) as the site.
 */
const LINKS_ENV = { ...ENV, AUTH_MAILER_AUTOCONFIRM: "false", AUTH_SITE_URL: "http://127.0.0.1:3000" }

/** The four users GoTrue left a mailed link pending for. */
const pendingLinks = () => [
  manifest.users.pending_signup,
  manifest.users.pending_recovery,
  manifest.users.pending_magiclink,
  manifest.users.pending_invite
] as const

/**
 * A token GoTrue spent: its users column emptied to "" (not NULL) and every one_time_tokens row of the user deleted
 * (models.User Confirm / Recover, ClearAllOneTimeTokensForUser).
 */
const expectSpent = (userId: string) =>
  Effect.map(pendingState(userId), (state) => {
    expect(state.columns).toMatchObject({ confirmation_token: "", recovery_token: "" })
    expect(state.oneTimeTokens).toEqual([])
  })

/** GoTrue's answer to a code that was spent: 403 otp_expired. */
const expectOtpRefused = (attempt: Promise<{ readonly error: ClientError | null }>) =>
  Effect.map(call(() => attempt), ({ error }) => {
    expect([error?.status, error?.code, error?.message]).toEqual([403, "otp_expired", "Token has expired or is invalid"])
  })

/** A signed-in client sets a new password (updateUser), and a fresh client signs in with it. */
const expectNewPasswordWorks = (client: GoTrueClient, email: string) =>
  Effect.gen(function*() {
    const password = `${PASSWORD}-${randomUUID().slice(0, 4)}`
    expect((yield* call(() => client.updateUser({ password }))).error).toBeNull()
    const { client: fresh } = authClient(yield* ServerUrl)
    const signedIn = yield* call(() => fresh.signInWithPassword({ email, password }))
    expect(signedIn.error).toBeNull()
    expect(signedIn.data.user?.email).toBe(email)
  })

/** When GoTrue sent the email change written by SQL: before the switch, as moveSentAtForward leaves its codes. */
const sentBeforeSwitch = Effect.sync(() => new Date(Date.now() - Duration.toMillis(SENT_BEFORE_SWITCH)))

/** After both halves: the address moved, GoTrue's columns and rows emptied, the identity follows, the new address signs in. */
const expectEmailChanged = (user: { readonly id: string; readonly email: string; readonly password: string }, email: string) =>
  Effect.gen(function*() {
    const state = yield* pendingState(user.id)
    expect(state.columns).toMatchObject({
      email_change: "",
      email_change_token_new: "",
      email_change_token_current: "",
      email_change_confirm_status: 0
    })
    expect(state.oneTimeTokens).toEqual([])
    const { client } = authClient(yield* ServerUrl)
    const signedIn = yield* call(() => client.signInWithPassword({ email, password: user.password }))
    expect(signedIn.error).toBeNull()
    expect(signedIn.data.user).toMatchObject({ id: user.id, email })
    expect(signedIn.data.user?.identities).toMatchObject([{ provider: "email", identity_data: { email, email_verified: true } }])
    const old = yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))
    expect([old.error?.status, old.error?.code]).toEqual([400, "invalid_credentials"])
  })

/** An access token of a session GoTrue started, shaped and signed as GoTrue signs them (the fixture's secret). */
const gotrueAccessToken = (userId: string, email: string, sessionId: string): string =>
  signHs256({
    sub: userId,
    aud: "authenticated",
    role: "authenticated",
    exp: nowSeconds() + 600,
    iat: nowSeconds(),
    email,
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: {},
    aal: "aal1",
    amr: [{ method: "password", timestamp: nowSeconds() }],
    session_id: sessionId,
    is_anonymous: false
  }, manifest.jwt_secret)

/** GET of a link without following its redirect. */
const openLink = (url: string, path: string) =>
  call(async () => {
    const response = await fetch(`${url}${path}`, { redirect: "manual" })
    return { status: response.status, location: response.headers.get("location") ?? "" }
  })

describe.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)("a database GoTrue v2.196 made", () => {
  // Each layer is named: @effect/vitest's layer() sets `it.effect` on the one shared `it`, and vitest runs a describe's
  // body only after the file's, so a nested describe (MFA's, the pending links') in an unnamed layer would take the
  // last layer's server. A named layer is a describe of its own, whose nested describes are collected before the next.
  layer(OverGoTrueDatabase, { timeout: 180_000, excludeTestServices: true })("one server over the fixture", (it) => {
    it.effect("takes Gatehouse's migrations, and GoTrue's own tables and rows stay as they were", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const applied = yield* sql<{ readonly version: number }>`SELECT version FROM auth.gatehouse_migrations ORDER BY version`
        expect(applied.map((row) => row.version)).toStrictEqual(
          readMigrations().filter((m) => m.product === "auth").map((m) => m.version)
        )
        // GoTrue's 70 migrations, as its own migrator recorded them, and every user it made.
        const [gotrue] = yield* sql<{ readonly count: string }>`SELECT count(*) AS count FROM auth.schema_migrations`
        expect(Number(gotrue!.count)).toBe(70)
        const ids = Object.values(manifest.users).map((user) => user.id)
        const users = yield* sql<{ readonly id: string }>`SELECT id FROM auth.users WHERE id IN ${sql.in(ids)}`
        expect(users.map((row) => row.id).sort()).toStrictEqual([...ids].sort())
      }))

    it.effect("signs password_user in with the password GoTrue hashed", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.password_user
        const response = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: user.password } })
        expect(response.status).toBe(200)
        expect(response.json).toMatchObject({
          token_type: "bearer",
          user: { id: user.id, email: user.email, user_metadata: { display_name: user.user_metadata_given.display_name } }
        })
        expect(decodeJwt(response.json.access_token).payload).toMatchObject({ sub: user.id, aal: "aal1" })
        const wrong = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: `${user.password}!` } })
        expect(wrong.status).toBe(400)
      }))

    it.effect("accepts an access token GoTrue issued (GET /user)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.password_user
        const response = yield* raw(url, "/user", { bearer: user.access_token })
        expect(response.status).toBe(200)
        expect(response.json).toMatchObject({ id: user.id, email: user.email, aud: "authenticated", role: "authenticated" })
        const forged = yield* raw(url, "/user", { bearer: `${user.access_token.slice(0, -2)}AA` })
        expect(forged.status).toBe(403)
      }))

    it.effect("refreshes a session GoTrue started with its 12-character token; the one GoTrue rotated away is reuse and ends its session", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.password_user
        const tokens = user.refresh_tokens
        const refresh = (token: string) => raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token } })
        const b = yield* refresh(tokens.session_b_current)
        expect(b.status, b.text).toBe(200)
        expect(b.json.user.id).toBe(user.id)
        // The child is Gatehouse's: from here the session rotates as any other.
        expect(isGatehouseRefreshToken(b.json.refresh_token, manifest.jwt_secret)).toBe(true)
        // GoTrue's token presented again at once (a client that lost the answer) gets the same child.
        expect((yield* refresh(tokens.session_b_current)).json.refresh_token).toBe(b.json.refresh_token)
        const next = yield* refresh(b.json.refresh_token)
        expect(next.status, next.text).toBe(200)

        // Session A's first token, which GoTrue rotated away days ago, is reuse: session A ends, its current token too.
        const reused = yield* refresh(tokens.session_a_revoked_parent)
        expect([reused.status, reused.json.error_code]).toEqual([400, "refresh_token_already_used"])
        const current = yield* refresh(tokens.session_a_current)
        expect([current.status, current.json.error_code]).toEqual([400, "refresh_token_not_found"])
        // Session B lives on.
        expect((yield* refresh(next.json.refresh_token)).status).toBe(200)
      }))

    it.effect("signs a new user up beside GoTrue's, with a session of its own", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("after-gotrue")
        const { client } = authClient(url)
        const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD }))
        expect(error).toBeNull()
        expect(data.user?.email).toBe(email)
        const me = yield* raw(url, "/user", { bearer: data.session!.access_token })
        expect(me.status).toBe(200)
        expect(me.json).toMatchObject({ id: data.user!.id, email })
      }))

    it.effect("verifies a code GoTrue mailed, once the dump's age is taken off its send time (and not before)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.pending_signup
        const verify = raw(url, "/verify", { body: { type: "signup", email: user.email, token: user.email_otp } })
        const stale = yield* verify
        expect(stale.status).toBe(403)
        expect(stale.json).toMatchObject({ error_code: "otp_expired" })

        const moved = yield* moveSentAtForward(yield* FixtureUrl)
        expect(Duration.toSeconds(moved)).toBeGreaterThan(0)
        const fresh = yield* verify
        expect(fresh.status).toBe(200)
        expect(fresh.json).toMatchObject({ user: { id: user.id, email: user.email } })
        expect(fresh.json.user.email_confirmed_at).toEqual(expect.any(String))
      }))

    // Issue 27 (MFA): the checks that GoTrue's factors are honoured, on the same server, for whoever builds the routes to fill in.
    describe("MFA over GoTrue's factors (issue 27)", () => {
      const signIn = (user: { readonly email: string; readonly password: string }) =>
        Effect.flatMap(ServerUrl, (url) =>
          Effect.map(raw(url, "/token?grant_type=password", { body: { email: user.email, password: user.password } }), (response) => {
            expect(response.status).toBe(200)
            return response.json
          }))

      /** A code from the secret GoTrue stored, as the user's authenticator app shows it. */
      const totp = (secret: string) =>
        new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate()

      /** Challenges the factor and verifies `code` with the session's access token. */
      const challengeAndVerify = (bearer: string, factorId: string, code: string) =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const challenge = yield* raw(url, `/factors/${factorId}/challenge`, { bearer, body: {} })
          expect(challenge.status).toBe(200)
          return yield* raw(url, `/factors/${factorId}/verify`, { bearer, body: { challenge_id: challenge.json.id, code } })
        })

      it.effect("lists mfa_user's verified TOTP factor (factor_id) in GET /user's factors, and mfa_unverified's as unverified", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const verified = yield* signIn(manifest.users.mfa_user)
          const me = yield* raw(url, "/user", { bearer: verified.access_token })
          expect(me.json.factors).toMatchObject([{ id: manifest.users.mfa_user.factor_id, factor_type: "totp", status: "verified" }])
          const pending = yield* signIn(manifest.users.mfa_unverified)
          expect(pending.user.factors).toMatchObject([{ id: manifest.users.mfa_unverified.factor_id, factor_type: "totp", status: "unverified" }])
        }))

      it.effect("signs mfa_user in by password at aal1, with next level aal2 (manifest.users.mfa_user.aal1_note)", () =>
        Effect.gen(function*() {
          const { client } = authClient(yield* ServerUrl)
          const user = manifest.users.mfa_user
          expect((yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))).error).toBeNull()
          const level = yield* call(() => client.mfa.getAuthenticatorAssuranceLevel())
          expect(level.data).toMatchObject({ currentLevel: "aal1", nextLevel: "aal2" })
        }))

      it.effect("refreshes mfa_user's aal2 session (aal2_refresh_token) and stays at aal2 with the totp amr", () =>
        Effect.gen(function*() {
          const user = manifest.users.mfa_user
          const response = yield* raw(yield* ServerUrl, "/token?grant_type=refresh_token", { body: { refresh_token: user.aal2_refresh_token } })
          expect(response.status, response.text).toBe(200)
          const claims = decodeJwt(response.json.access_token).payload
          expect(claims["aal"]).toBe("aal2")
          expect(new Set(claims["amr"].map((entry: { method: string }) => entry.method))).toEqual(new Set(["totp", "password"]))
          expect(response.json.user.factors).toMatchObject([{ id: user.factor_id, status: "verified", factor_type: "totp" }])
        }))

      it.effect("verifies a TOTP code made from manifest.users.mfa_user.totp_secret on a new challenge and steps the session up to aal2", () =>
        Effect.gen(function*() {
          const user = manifest.users.mfa_user
          const session = yield* signIn(user)
          const verified = yield* challengeAndVerify(session.access_token, user.factor_id, totp(user.totp_secret))
          expect(verified.status).toBe(200)
          const claims = decodeJwt(verified.json.access_token).payload
          expect(claims["aal"]).toBe("aal2")
          expect(claims["amr"].map((entry: { method: string }) => entry.method)).toContain("totp")
        }))

      it.effect("finishes mfa_unverified's enrolment with a code from its totp_secret", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const user = manifest.users.mfa_unverified
          const session = yield* signIn(user)
          const code = totp(user.totp_secret)
          const wrong = yield* challengeAndVerify(session.access_token, user.factor_id, String((Number(code) + 1) % 1_000_000).padStart(6, "0"))
          expect(wrong.json).toMatchObject({ error_code: "mfa_verification_failed" })
          const verified = yield* challengeAndVerify(session.access_token, user.factor_id, code)
          expect(verified.status).toBe(200)
          expect(decodeJwt(verified.json.access_token).payload["aal"]).toBe("aal2")
          expect(verified.json.user.factors).toMatchObject([{ id: user.factor_id, status: "verified" }])
          // At aal2 the factor GoTrue enrolled can be removed again.
          const removed = yield* raw(url, `/factors/${user.factor_id}`, { method: "DELETE", bearer: verified.json.access_token })
          expect(removed.json).toEqual({ id: user.factor_id })
        }))
    })

    // From here on every user of the fixture, one at a time: what each could do against GoTrue, it does here.
    describe("pending links, by the code GoTrue mailed (verifyOtp with email and token)", () => {
      it.effect("pending_signup: its spent code is cleared as GoTrue clears it, refused again, and its password signs in", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const user = manifest.users.pending_signup
          // The test above verified it: GoTrue's Confirm empties the column and deletes every one_time_tokens row.
          yield* expectSpent(user.id)
          const { client } = authClient(url)
          yield* expectOtpRefused(client.verifyOtp({ email: user.email, token: user.email_otp, type: "signup" }))
          const signedIn = yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))
          expect(signedIn.error).toBeNull()
          expect(signedIn.data.user?.id).toBe(user.id)
        }))

      it.effect("pending_recovery: the code signs in, the user sets a new password and signs in with it", () =>
        Effect.gen(function*() {
          const user = manifest.users.pending_recovery
          const { client } = authClient(yield* ServerUrl)
          const verified = yield* call(() => client.verifyOtp({ email: user.email, token: user.email_otp, type: "recovery" }))
          expect(verified.error).toBeNull()
          expect(verified.data.user?.id).toBe(user.id)
          expect(decodeJwt(verified.data.session!.access_token).payload["amr"]).toMatchObject([{ method: "otp" }])
          yield* expectSpent(user.id)
          yield* expectOtpRefused(client.verifyOtp({ email: user.email, token: user.email_otp, type: "recovery" }))
          yield* expectNewPasswordWorks(client, user.email)
        }))

      it.effect("pending_magiclink: the code signs in once", () =>
        Effect.gen(function*() {
          const user = manifest.users.pending_magiclink
          const { client } = authClient(yield* ServerUrl)
          const verified = yield* call(() => client.verifyOtp({ email: user.email, token: user.email_otp, type: "magiclink" }))
          expect(verified.error).toBeNull()
          expect(verified.data.user).toMatchObject({ id: user.id, email: user.email })
          const me = yield* call(() => client.getUser())
          expect(me.data.user?.id).toBe(user.id)
          yield* expectSpent(user.id)
          yield* expectOtpRefused(client.verifyOtp({ email: user.email, token: user.email_otp, type: "magiclink" }))
        }))

      it.effect("pending_invite: the code confirms the invitation and signs in; the user then chooses a password", () =>
        Effect.gen(function*() {
          const user = manifest.users.pending_invite
          const { client } = authClient(yield* ServerUrl)
          const verified = yield* call(() => client.verifyOtp({ email: user.email, token: user.email_otp, type: "invite" }))
          expect(verified.error).toBeNull()
          expect(verified.data.user).toMatchObject({ id: user.id, email: user.email, email_confirmed_at: expect.any(String) })
          yield* expectSpent(user.id)
          yield* expectOtpRefused(client.verifyOtp({ email: user.email, token: user.email_otp, type: "invite" }))
          yield* expectNewPasswordWorks(client, user.email)
        }))
    })

    it.effect("editor: signs in, and its access token carries the app_metadata an admin set, beside GoTrue's provider fields", () =>
      Effect.gen(function*() {
        const user = manifest.users.editor
        const { client } = authClient(yield* ServerUrl)
        const { data, error } = yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))
        expect(error).toBeNull()
        const appMetadata = { provider: "email", providers: ["email"], ...user.app_metadata_set }
        expect(decodeJwt(data.session!.access_token).payload["app_metadata"]).toEqual(appMetadata)
        expect(data.user?.app_metadata).toEqual(appMetadata)
      }))

    it.effect("phone_user: signs in with phone and password; the refresh token GoTrue gave it refreshes", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.phone_user
        const { client } = authClient(url)
        const { data, error } = yield* call(() => client.signInWithPassword({ phone: `+${user.phone}`, password: user.password }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ id: user.id, phone: user.phone, phone_confirmed_at: expect.any(String) })
        const refreshed = yield* call(() => authClient(url).client.refreshSession({ refresh_token: user.refresh_token }))
        expect(refreshed.error).toBeNull()
        expect(refreshed.data.user?.id).toBe(user.id)
        expect(decodeJwt(refreshed.data.session!.access_token).payload).toMatchObject({ sub: user.id, phone: user.phone })
      }))

    it.effect("anonymous: its refresh token refreshes, GET /user says is_anonymous, and it becomes a permanent user by adding an email", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.anonymous
        const before = yield* raw(url, "/user", { bearer: user.access_token })
        expect([before.status, before.json.is_anonymous]).toEqual([200, true])
        const { client } = authClient(url)
        const refreshed = yield* call(() => client.refreshSession({ refresh_token: user.refresh_token }))
        expect(refreshed.error).toBeNull()
        expect(decodeJwt(refreshed.data.session!.access_token).payload).toMatchObject({ sub: user.id, is_anonymous: true })
        expect((yield* call(() => client.getUser())).data.user).toMatchObject({ id: user.id, is_anonymous: true })
        // With MAILER_AUTOCONFIRM on, GoTrue's updateUser confirms an anonymous user's new address at once (user.go).
        const email = uniqueEmail("was-anonymous")
        const converted = yield* call(() => client.updateUser({ email }))
        expect(converted.error).toBeNull()
        expect(converted.data.user).toMatchObject({ id: user.id, email, is_anonymous: false, email_confirmed_at: expect.any(String) })
        // GoTrue's emailChangeVerify makes the identity from provider.Claims{sub, email, email_verified}: structs.Map
        // keeps phone_verified (false) too.
        expect(converted.data.user?.identities).toMatchObject([{ provider: "email", id: user.id, user_id: user.id, email }])
        expect(converted.data.user?.identities?.[0]?.identity_data).toEqual({ sub: user.id, email, email_verified: true, phone_verified: false })
        expect(converted.data.user?.user_metadata).toEqual({ email_verified: true })
        // It can now set a password and sign in with it.
        expect((yield* call(() => client.updateUser({ password: PASSWORD }))).error).toBeNull()
        const signedIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
        expect(signedIn.error).toBeNull()
        expect(signedIn.data.user).toMatchObject({ id: user.id, is_anonymous: false })
      }))

    it.effect("banned: the password answers 400 user_banned, and the refresh token from before the ban is refused", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.banned
        const signIn = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: user.password } })
        expect(signIn.json).toEqual(legacyError(400, "user_banned", "User is banned"))
        expect(signIn.status).toBe(400)
        // Deliberately unlike GoTrue, which checks the ban before the password (so a wrong password is told
        // user_banned too): Gatehouse checks it after, so the answer does not confirm the account to a guesser.
        const wrong = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: "not it" } })
        expect([wrong.status, wrong.json.error_code]).toEqual([400, "invalid_credentials"])
        const { client } = authClient(url)
        const refused = yield* call(() => client.refreshSession({ refresh_token: user.refresh_token_before_ban }))
        expect([refused.error?.status, refused.error?.code, refused.error?.message])
          .toEqual([400, "user_banned", "Invalid Refresh Token: User Banned"])
        // An access token of the session GoTrue left it (a ban ends no session): 403 user_banned (auth.go).
        const sql = yield* SqlClient.SqlClient
        const [session] = yield* sql<{ id: string }>`SELECT id::text AS id FROM auth.sessions WHERE user_id = ${user.id}`
        const me = yield* raw(url, "/user", { bearer: gotrueAccessToken(user.id, user.email, session!.id) })
        expect([me.status, me.json]).toEqual([403, legacyError(403, "user_banned", "User is banned")])
      }))

    it.effect("soft_deleted: cannot sign in; GoTrue freed its address, so it signs up anew; the admin API still shows the deleted row", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.soft_deleted
        const signIn = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: user.password } })
        expect([signIn.status, signIn.json]).toEqual([400, legacyError(400, "invalid_credentials", "Invalid login credentials")])
        // GoTrue's soft delete scrambled email and phone, so the address is free: a sign-up makes a new user.
        const { client } = authClient(url)
        const signUp = yield* call(() => client.signUp({ email: user.email, password: PASSWORD }))
        expect(signUp.error).toBeNull()
        expect(signUp.data.user?.id).not.toBe(user.id)
        expect(signUp.data.user?.email).toBe(user.email)
        // GoTrue's FindUsersInAudience does not filter deleted_at: the admin API lists and reads the deleted row.
        const admin = yield* projectClient("service_role")
        const read = yield* call(() => admin.auth.admin.getUserById(user.id))
        expect(read.error).toBeNull()
        expect(read.data.user).toMatchObject({ id: user.id, deleted_at: expect.any(String) })
        expect(read.data.user?.email).not.toBe(user.email)
      }))

    it.effect("signs in with GoTrue-made bcrypt hashes of any cost and prefix ($2a$ cost 4 and 13, $2y$, $2b$), rehashing other costs", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        // The magic-link user has no password of its own, so its row is free for this.
        const user = manifest.users.pending_magiclink
        const password = "a known password 1"
        const hashes = [
          yield* call(() => bcrypt.hash(password, { cost: 4, version: "2a" })),
          yield* call(() => bcrypt.hash(password, { cost: 13, version: "2a" })),
          yield* call(() => bcrypt.hash(password, { cost: 10, version: "2y" })),
          yield* call(() => bcrypt.hash(password, { cost: 4, version: "2y" })),
          yield* call(() => bcrypt.hash(password, { cost: 10, version: "2b" }))
        ]
        expect(hashes.map((hash) => hash.slice(0, 7))).toEqual(["$2a$04$", "$2a$13$", "$2y$10$", "$2y$04$", "$2b$10$"])
        const sql = yield* SqlClient.SqlClient
        const storedHash = Effect.map(
          sql<{ encrypted_password: string }>`SELECT encrypted_password FROM auth.users WHERE id = ${user.id}`,
          (rows) => rows[0]!.encrypted_password
        )
        for (const hash of hashes) {
          yield* setEncryptedPassword(user.id, hash)
          const wrong = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password: `${password}!` } })
          expect([wrong.status, wrong.json.error_code]).toEqual([400, "invalid_credentials"])
          expect(yield* storedHash).toBe(hash)
          const signIn = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password } })
          expect(signIn.status, `${hash.slice(0, 7)}: ${signIn.text}`).toBe(200)
          expect(signIn.json.user.id).toBe(user.id)
          // As GoTrue's Authenticate, a hash of another cost is stored again at the server's (4: the test hasher's
          // minimum), as $2a$; one at the server's cost stays as it came, whatever its label.
          const after = yield* storedHash
          if (hash.slice(4, 6) === "04") expect(after).toBe(hash)
          else expect(after.slice(0, 7)).toBe("$2a$04$")
          const again = yield* raw(url, "/token?grant_type=password", { body: { email: user.email, password } })
          expect(again.status).toBe(200)
        }
      }))

    it.effect("GET /user shows the identities GoTrue stored, and unlinking the only one is refused as GoTrue refuses it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const sql = yield* SqlClient.SqlClient
        const cases = [
          { user: manifest.users.editor, login: { email: manifest.users.editor.email } },
          { user: manifest.users.phone_user, login: { phone: `+${manifest.users.phone_user.phone}` } }
        ] as const
        for (const { login, user } of cases) {
          const stored = yield* sql<{ id: string; provider: string; provider_id: string; identity_data: Record<string, unknown> }>`
            SELECT id, provider, provider_id, identity_data FROM auth.identities WHERE user_id = ${user.id}`
          expect(stored).toHaveLength(1)
          const { client } = authClient(url)
          expect((yield* call(() => client.signInWithPassword({ ...login, password: user.password } as never))).error).toBeNull()
          const me = (yield* call(() => client.getUser())).data.user!
          expect(me.identities).toHaveLength(1)
          expect(me.identities![0]).toMatchObject({
            identity_id: stored[0]!.id,
            id: stored[0]!.provider_id,
            user_id: user.id,
            provider: stored[0]!.provider,
            identity_data: stored[0]!.identity_data
          })
          const identities = yield* call(() => client.getUserIdentities())
          expect(identities.data?.identities.map((identity) => identity.identity_id)).toEqual([stored[0]!.id])
          const unlink = yield* call(() => client.unlinkIdentity(me.identities![0]!))
          expect([unlink.error?.status, unlink.error?.code]).toEqual([422, "single_identity_not_deletable"])
        }
        // password_user's identity, as GoTrue wrote it for the sign-up (its metadata copied into identity_data).
        const user = manifest.users.password_user
        const { client } = authClient(url)
        const { data, error } = yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))
        expect(error).toBeNull()
        expect(data.user?.identities).toEqual([expect.objectContaining({
          identity_id: "14b48043-dfeb-4839-b091-627c5fe7f1f2",
          id: user.id,
          provider: "email",
          email: user.email,
          identity_data: { sub: user.id, email: user.email, display_name: "Pat", email_verified: false, phone_verified: false }
        })])
      }))

    it.effect("links a github identity to password_user beside the email identity GoTrue made, and unlinks it again", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.password_user
        const { client } = authClient(url)
        expect((yield* call(() => client.signInWithPassword({ email: user.email, password: user.password }))).error).toBeNull()
        const id = randomInt(1_000_000, 2_000_000_000)
        github.user = { ...octocat, id, login: `octo-${id}`, name: `Octo ${id}` }
        github.emails = [{ email: uniqueEmail("octo"), primary: true, verified: true, visibility: "public" }]
        // The browser opens linkIdentity's URL under API_EXTERNAL_URL, goes on to GitHub, which sends it back at once.
        const apiExternal = new URL(GITHUB_REDIRECT_URI).origin
        const linkBrowser = browser({ [apiExternal]: url })
        const started = yield* call(() => client.linkIdentity({ provider: "github", options: { redirectTo: "http://localhost:3000/linked" } }))
        expect(started.error).toBeNull()
        const toGitHub = (yield* call(() => linkBrowser.request(started.data.url!))).headers.get("location")!
        const state = new URL(toGitHub).searchParams.get("state")!
        const back = yield* call(() => linkBrowser.request(`${GITHUB_REDIRECT_URI}?${new URLSearchParams({ code: GITHUB_CODE, state })}`))
        const fragment = new URLSearchParams(new URL(back.headers.get("location")!).hash.slice(1))
        expect(fragment.get("error_description")).toBeNull()
        expect(decodeJwt(fragment.get("access_token")!).payload["sub"]).toBe(user.id)
        const identities = (yield* call(() => client.getUserIdentities())).data!.identities
        expect(identities.map((identity) => [identity.provider, identity.id])).toEqual([["email", user.id], ["github", String(id)]])
        expect((yield* call(() => client.getUser())).data.user?.app_metadata).toEqual({ provider: "email", providers: ["email", "github"] })
        const unlinked = yield* call(() => client.unlinkIdentity(identities[1]!))
        expect(unlinked.error).toBeNull()
        const left = (yield* call(() => client.getUserIdentities())).data!.identities
        expect(left.map((identity) => identity.identity_id)).toEqual(["14b48043-dfeb-4839-b091-627c5fe7f1f2"])
        const refused = yield* call(() => client.unlinkIdentity(left[0]!))
        expect([refused.error?.status, refused.error?.code]).toEqual([422, "single_identity_not_deletable"])
        // Still signs in with the password GoTrue hashed.
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email: user.email, password: user.password }))).error).toBeNull()
      }))

    it.effect("a session GoTrue started whose not_after has passed refuses to refresh (400 session_expired)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const sql = yield* SqlClient.SqlClient
        const user = manifest.users.editor
        // The editor's session GoTrue started, and its 12-character refresh token as GoTrue stored it.
        const [row] = yield* sql<{ session_id: string; token: string }>`
          SELECT session_id::text AS session_id, token FROM auth.refresh_tokens
          WHERE user_id = ${user.id} AND NOT revoked AND token ~ '^[a-z0-9]{12}$' ORDER BY id DESC LIMIT 1`
        expect(row?.token).toMatch(/^[a-z0-9]{12}$/)
        yield* sql`UPDATE auth.sessions SET not_after = now() - interval '1 minute' WHERE id = ${row!.session_id}`
        const refused = yield* call(() => authClient(url).client.refreshSession({ refresh_token: row!.token }))
        expect([refused.error?.status, refused.error?.code, refused.error?.message])
          .toEqual([400, "session_expired", "Invalid Refresh Token: Session Expired"])
        // An access token of that session: GoTrue's requireAuthentication only checks that the session exists
        // (auth.go maybeLoadUserOrSession), so GET /user answers until the token's exp.
        const me = yield* raw(url, "/user", { bearer: gotrueAccessToken(user.id, user.email, row!.session_id) })
        expect([me.status, me.json.id]).toEqual([200, user.id])
      }))

    it.effect("the admin API lists GoTrue's users page by page, reads each, and an update keeps what it does not name", () =>
      Effect.gen(function*() {
        const admin = yield* projectClient("service_role")
        const ids = Object.values(manifest.users).map((user) => user.id)
        const seen: Array<string> = []
        let total = 0
        for (let page = 1; page <= 20; page++) {
          const listed = yield* call(() => admin.auth.admin.listUsers({ page, perPage: 5 }))
          expect(listed.error).toBeNull()
          total = (listed.data as { total: number }).total
          expect(listed.data.users.length).toBeLessThanOrEqual(5)
          seen.push(...listed.data.users.map((user) => user.id))
          if (listed.data.users.length < 5) break
        }
        expect(seen.length).toBe(total)
        // GoTrue's paging headers over the raw route: the total, and the links to the next and the last page.
        const secondPage = yield* raw(yield* ServerUrl, "/admin/users?page=2&per_page=3", { bearer: yield* projectKey("service_role") })
        expect(secondPage.status).toBe(200)
        expect(secondPage.json.users.map((user: { id: string }) => user.id)).toEqual(seen.slice(3, 6))
        expect(secondPage.headers.get("x-total-count")).toBe(String(total))
        expect(secondPage.headers.get("link")).toContain('rel="next"')
        // The soft-deleted user is listed, with its deleted_at (GoTrue's FindUsersInAudience does not filter it).
        const listedDeleted = yield* raw(yield* ServerUrl, `/admin/users/${manifest.users.soft_deleted.id}`, { bearer: yield* projectKey("service_role") })
        expect(listedDeleted.json).toMatchObject({ id: manifest.users.soft_deleted.id, deleted_at: expect.any(String) })
        expect(new Set(seen).size).toBe(seen.length)
        expect(seen).toEqual(expect.arrayContaining(ids))
        for (const id of ids) {
          const read = yield* call(() => admin.auth.admin.getUserById(id))
          expect(read.error, id).toBeNull()
          expect(read.data.user?.id).toBe(id)
        }
        const editor = manifest.users.editor
        const before = (yield* call(() => admin.auth.admin.getUserById(editor.id))).data.user!
        const updated = yield* call(() => admin.auth.admin.updateUserById(editor.id, { app_metadata: { plan: "team" } }))
        expect(updated.error).toBeNull()
        const { app_metadata: afterMeta, updated_at: _after, ...afterRest } = updated.data.user!
        const { app_metadata: beforeMeta, updated_at: _before, ...beforeRest } = before
        expect(afterMeta).toEqual({ ...beforeMeta, plan: "team" })
        expect(afterRest).toEqual(beforeRest)
        const { client } = authClient(yield* ServerUrl)
        const { data, error } = yield* call(() => client.signInWithPassword({ email: editor.email, password: editor.password }))
        expect(error).toBeNull()
        expect(decodeJwt(data.session!.access_token).payload["app_metadata"]).toMatchObject({ roles: ["editor"], plan: "team" })
      }))
  })

  // A second copy of the fixture: each pending link once more, now by the hash GoTrue's link carries.
  layer(overGoTrueDatabase(LINKS_ENV), { timeout: 180_000, excludeTestServices: true })("a second copy: links by token_hash", (it) => {
    it.effect("verifies each pending link by verifyOtp({ token_hash, type }) once, and clears it as GoTrue does", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        yield* moveSentAtForward(yield* FixtureUrl)
        for (const user of pendingLinks()) {
          // GoTrue's row for the mail, as its CreateOneTimeToken wrote it, beside the users column.
          expect((yield* pendingState(user.id)).oneTimeTokens).toEqual([{
            token_type: user.verification_type === "signup" || user.verification_type === "invite" ? "confirmation_token" : "recovery_token",
            token_hash: user.hashed_token,
            relates_to: user.email
          }])
          const { client } = authClient(url)
          const verified = yield* call(() => client.verifyOtp({ token_hash: user.hashed_token, type: user.verification_type as never }))
          expect(verified.error, user.verification_type).toBeNull()
          expect(verified.data.user).toMatchObject({ id: user.id, email: user.email, email_confirmed_at: expect.any(String) })
          expect((yield* call(() => client.getUser())).data.user?.id).toBe(user.id)
          yield* expectSpent(user.id)
          const again = yield* call(() => authClient(url).client.verifyOtp({ token_hash: user.hashed_token, type: user.verification_type as never }))
          expect([again.error?.status, again.error?.code, again.error?.message])
            .toEqual([403, "otp_expired", "Email link is invalid or has expired"])
          // The code of the same mail went with it.
          yield* expectOtpRefused(authClient(url).client.verifyOtp({ email: user.email, token: user.email_otp, type: user.verification_type as never }))
        }
      }))

    it.effect("confirms an email change GoTrue left pending by both codes (secure email change), and the address changes", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.editor
        const change = yield* writePendingEmailChange(user, uniqueEmail("editor-moved"), yield* sentBeforeSwitch)
        const { client } = authClient(url)
        const first = yield* call(() => client.verifyOtp({ email: change.current.email, token: change.current.otp, type: "email_change" }))
        expect(first.error).toBeNull()
        // The first half answers only GoTrue's message, and spends only its own column and row.
        expect(first.data).toMatchObject({ user: null, session: null })
        const half = yield* pendingState(user.id)
        expect(half.columns).toMatchObject({
          email_change: change.next.email,
          email_change_token_current: "",
          email_change_token_new: change.next.tokenHash,
          email_change_confirm_status: 1
        })
        expect(half.oneTimeTokens.map((row) => row.token_type)).toEqual(["email_change_token_new"])
        const second = yield* call(() => client.verifyOtp({ email: change.next.email, token: change.next.otp, type: "email_change" }))
        expect(second.error).toBeNull()
        expect(second.data.user).toMatchObject({ id: user.id, email: change.next.email })
        yield* expectEmailChanged(user, change.next.email)
      }))
    it.effect("anonymous adds an email without MAILER_AUTOCONFIRM: the code mailed to the new address alone makes it permanent", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.anonymous
        const { client } = authClient(url)
        expect((yield* call(() => client.refreshSession({ refresh_token: user.refresh_token }))).error).toBeNull()
        const email = uniqueEmail("anonymous-confirms")
        const requested = yield* call(() => client.updateUser({ email }))
        expect(requested.error).toBeNull()
        expect(requested.data.user).toMatchObject({ id: user.id, email: "", new_email: email, is_anonymous: true })
        yield* settledMail
        const mails = yield* mailTo(email)
        expect(mails).toHaveLength(1)
        // No current address to confirm from: one half is the whole change (GoTrue's emailChangeVerify).
        const verified = yield* call(() => client.verifyOtp({ email, token: codeIn(mails[0]!), type: "email_change" }))
        expect(verified.error).toBeNull()
        expect(verified.data.user).toMatchObject({ id: user.id, email, is_anonymous: false, email_confirmed_at: expect.any(String) })
        expect(decodeJwt(verified.data.session!.access_token).payload).toMatchObject({ sub: user.id, is_anonymous: false, email })
      }))
  })

  // A third copy: each pending link as the browser opens it (GET /verify, the action_link), then an email change by links.
  layer(overGoTrueDatabase(LINKS_ENV), { timeout: 180_000, excludeTestServices: true })("a third copy: links opened", (it) => {
    it.effect("opens each pending link's action_link: 303 to its redirect_to with the session in the fragment, once", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        yield* moveSentAtForward(yield* FixtureUrl)
        const redirectTo = "http://127.0.0.1:3000"
        for (const user of pendingLinks()) {
          // GoTrue's action_link, pointed at this server; the manifest has pending_signup's as GoTrue printed it.
          const link = `/verify?token=${user.hashed_token}&type=${user.verification_type}&redirect_to=${redirectTo}`
          if (user.verification_type === "signup") {
            expect(manifest.users.pending_signup.action_link).toBe(`http://localhost:9990${link}`)
          }
          const opened = yield* openLink(url, link)
          expect(opened.status, user.verification_type).toBe(303)
          const landed = new URL(opened.location)
          expect(`${landed.origin}${landed.pathname}`).toBe(`${redirectTo}/`)
          const fragment = new URLSearchParams(landed.hash.slice(1))
          expect(fragment.get("type")).toBe(user.verification_type)
          expect(fragment.get("token_type")).toBe("bearer")
          const me = yield* raw(url, "/user", { bearer: fragment.get("access_token")! })
          expect([me.status, me.json.id]).toEqual([200, user.id])
          expect((yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: fragment.get("refresh_token") } })).status).toBe(200)
          yield* expectSpent(user.id)
          const again = new URL((yield* openLink(url, link)).location)
          expect(Object.fromEntries(new URLSearchParams(again.hash.slice(1)))).toMatchObject({
            error: "access_denied",
            error_code: "otp_expired",
            error_description: "Email link is invalid or has expired"
          })
        }
      }))

    it.effect("confirms an email change GoTrue left pending by both links (one opened, one by token_hash), and the address changes", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const user = manifest.users.editor
        const change = yield* writePendingEmailChange(user, uniqueEmail("editor-linked"), yield* sentBeforeSwitch)
        // The new address's mail, opened: GoTrue's first half lands with its message in the fragment.
        const first = yield* openLink(url, `/verify?token=${change.next.tokenHash}&type=email_change&redirect_to=http://127.0.0.1:3000`)
        expect(first.status).toBe(303)
        expect(Object.fromEntries(new URLSearchParams(new URL(first.location).hash.slice(1)))).toEqual({
          message: "Confirmation link accepted. Please proceed to confirm link sent to the other email",
          sb: ""
        })
        const half = yield* pendingState(user.id)
        expect(half.columns).toMatchObject({ email_change_token_new: "", email_change_token_current: change.current.tokenHash, email_change_confirm_status: 1 })
        expect(half.oneTimeTokens.map((row) => row.token_type)).toEqual(["email_change_token_current"])
        const second = yield* call(() => authClient(url).client.verifyOtp({ token_hash: change.current.tokenHash, type: "email_change" }))
        expect(second.error).toBeNull()
        expect(second.data.user).toMatchObject({ id: user.id, email: change.next.email })
        yield* expectEmailChanged(user, change.next.email)
        const again = yield* call(() => authClient(url).client.verifyOtp({ token_hash: change.current.tokenHash, type: "email_change" }))
        expect([again.error?.status, again.error?.code]).toEqual([403, "otp_expired"])
      }))
  })
})
