/**
 * Gatehouse taking over a database real Supabase Auth (GoTrue v2.196.0) made and used (shared/fixtures/gotrue-v2.196):
 * its migrations run over GoTrue's `auth` schema, and the users, passwords, tokens and codes GoTrue left keep working.
 *
 * PostgreSQL only: the dump can be loaded only by psql (pg_dump 15 writes `\restrict` meta-commands), which PGlite,
 * the embedded default, cannot run. Without DATABASE_URL the file is skipped.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as OTPAuth from "otpauth"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate, readMigrations } from "../../../src/platform/sql/Migrator.js"
import { gotrueFixtureMissing, gotrueManifest, loadGoTrueFixture, moveSentAtForward } from "../../support/GoTrueFixture.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import { authClient, call, decodeJwt, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"

const manifest = gotrueManifest

const ENV = {
  // GoTrue's access tokens in the manifest are signed with this; Gatehouse's are too from here on.
  AUTH_JWT_SECRET: manifest?.jwt_secret ?? "",
  // So that a new sign-up comes back with a session, written beside GoTrue's.
  AUTH_MAILER_AUTOCONFIRM: "true"
}

/** The fixture's database, for what a test does to its rows directly. */
class FixtureUrl extends Context.Tag("test/FixtureUrl")<FixtureUrl, string>() {}

/** The fixture loaded into a database of its own, Gatehouse's migrations run over it, and a server on it. */
const OverGoTrueDatabase = Layer.unwrapScoped(
  Effect.map(loadGoTrueFixture(Option.getOrElse(externalDatabaseUrl, () => "")), ({ url }) => {
    const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(ENV).db.namespace })))
    return TestServerOver(ENV).pipe(
      Layer.provideMerge(Migrated),
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
      Layer.provideMerge(Layer.succeed(FixtureUrl, url))
    )
  })
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

describe.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)("a database GoTrue v2.196 made", () => {
  layer(OverGoTrueDatabase, { timeout: 180_000, excludeTestServices: true })((it) => {
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
        expect(b.json.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
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
  })
})
