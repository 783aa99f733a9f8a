/**
 * The way back: a database GoTrue v2.196 made (shared/fixtures/gotrue-v2.196), a period on Gatehouse (sign-ups, a
 * magic link, a phone, an anonymous user, a changed password, an admin-made user, an invite, TOTP, refreshes, a ban,
 * a soft delete), Gatehouse stopped, `doctor` run, and the real GoTrue binary started on the same database: every
 * user Gatehouse made or changed must work at GoTrue. Whatever fails at GoTrue is a row Gatehouse wrote wrong.
 *
 * PostgreSQL only (psql loads the fixture), and only where the GoTrue binary is (GOTRUE_BIN, else /tmp/gotrue/auth):
 * CI cannot build it, so there the file is skipped.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as OTPAuth from "otpauth"
import { doctorVerdict } from "../../../src/auth/domain/GoTrueReadable.js"
import { parseSignedRefreshToken } from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import { refreshTokenKey } from "../../../src/auth/sessions/RefreshTokenCodec.js"
import { exportSessions } from "../../../src/auth/sessions/SessionExport.js"
import { GoTrueReadableRepo } from "../../../src/auth/users/GoTrueReadableRepo.js"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { isGatehouseRefreshToken } from "../../support/GatehouseTokens.js"
import { gotrueFixtureMissing, gotrueManifest, loadGoTrueFixture } from "../../support/GoTrueFixture.js"
import { realGoTrueMissing, startGoTrue } from "../../support/RealGoTrue.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import { authClient, call, codeIn, mailTo, nowSeconds, PASSWORD, raw, settledMail, signHs256, uniqueEmail, uniquePhone } from "./AcceptanceKit.js"

const manifest = gotrueManifest
const skipped = Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined || realGoTrueMissing !== undefined

const ENV = {
  // One secret for both servers: GoTrue's fixture tokens verify at Gatehouse and Gatehouse's at GoTrue.
  AUTH_JWT_SECRET: manifest?.jwt_secret ?? "",
  AUTH_MAILER_AUTOCONFIRM: "false",
  AUTH_SMTP_MAX_FREQUENCY: "0",
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMS_AUTOCONFIRM: "true",
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true"
}

class FixtureUrl extends Context.Tag("test/FixtureUrl")<FixtureUrl, string>() {}

const OverFixture = Layer.unwrapScoped(
  Effect.map(loadGoTrueFixture(Option.getOrElse(externalDatabaseUrl, () => "")), ({ url }) =>
    Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(ENV).db.namespace }))).pipe(
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
      Layer.provideMerge(Layer.succeed(FixtureUrl, url))
    ))
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

const serviceKey = () => signHs256({ iss: "supabase", role: "service_role", iat: nowSeconds(), exp: nowSeconds() + 3600 }, manifest.jwt_secret)
const adminOf = (url: string) => authClient(url, { headers: { Authorization: `Bearer ${serviceKey()}`, apikey: serviceKey() } }).client
const totpCode = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate()

/** What the period on Gatehouse left, for the checks at GoTrue. */
interface Made {
  /** Users that must sign in at GoTrue with email (or phone) and password. */
  readonly signIns: Array<{ readonly label: string; readonly email?: string; readonly phone?: string; readonly password: string }>
  /** Access tokens Gatehouse issued for users with no password (magic link, anonymous). */
  readonly accessTokens: Array<{ readonly label: string; readonly token: string; readonly id: string }>
  /** Refresh tokens Gatehouse handed out last, of live sessions. */
  readonly refreshTokens: Array<string>
  readonly ids: Array<string>
  editorOldPassword: string
  banned: { email: string; password: string }
  deleted: { email: string; password: string }
  unconfirmed: { email: string; password: string }
  totp: { email: string; password: string; secret: string; factorId: string }
  /** Codes Gatehouse mailed and nobody used yet, to verify at GoTrue. */
  readonly pendingCodes: Array<{ readonly type: "signup" | "recovery"; readonly email: string; readonly code: string }>
  /** A signed refresh token GoTrue issued for a session Gatehouse started, for the return to Gatehouse. */
  gotrueSignedToken: string
  /** A refresh token GoTrue issued after the switch back, for the return to Gatehouse. */
  gotrueRefreshToken: string
}

const made: Made = {
  signIns: [],
  accessTokens: [],
  refreshTokens: [],
  pendingCodes: [],
  ids: [],
  editorOldPassword: "",
  banned: { email: "", password: "" },
  deleted: { email: "", password: "" },
  unconfirmed: { email: "", password: "" },
  totp: { email: "", password: "", secret: "", factorId: "" },
  gotrueSignedToken: "",
  gotrueRefreshToken: ""
}

/** The period on Gatehouse, against a Gatehouse server on the fixture's database; the server stops at its end. */
const periodOnGatehouse = Effect.gen(function*() {
  const url = yield* ServerUrl
  const admin = adminOf(url)
  const fresh = () => authClient(url).client

  // Email sign-ups, confirmed with the code the mail carries; one left unconfirmed.
  for (const tag of ["signup-a", "signup-b"]) {
    const email = uniqueEmail(`back-${tag}`)
    const client = fresh()
    expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
    yield* settledMail
    const [mail] = yield* mailTo(email)
    const verified = yield* call(() => client.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))
    expect(verified.error).toBeNull()
    made.signIns.push({ label: tag, email, password: PASSWORD })
    made.ids.push(verified.data.user!.id)
    made.refreshTokens.push(verified.data.session!.refresh_token)
  }
  const unconfirmed = uniqueEmail("back-unconfirmed")
  expect((yield* call(() => fresh().signUp({ email: unconfirmed, password: PASSWORD }))).error).toBeNull()
  made.unconfirmed = { email: unconfirmed, password: PASSWORD }
  yield* settledMail
  const [confirmation] = yield* mailTo(unconfirmed)
  made.pendingCodes.push({ type: "signup", email: unconfirmed, code: codeIn(confirmation!) })

  // A magic-link user: signs up by the emailed code, has no password.
  const magic = uniqueEmail("back-magic")
  const magicClient = fresh()
  expect((yield* call(() => magicClient.signInWithOtp({ email: magic }))).error).toBeNull()
  yield* settledMail
  const [magicMail] = yield* mailTo(magic)
  const magicIn = yield* call(() => magicClient.verifyOtp({ email: magic, token: codeIn(magicMail!), type: "email" }))
  expect(magicIn.error).toBeNull()
  made.accessTokens.push({ label: "magic link", token: magicIn.data.session!.access_token, id: magicIn.data.user!.id })
  made.refreshTokens.push(magicIn.data.session!.refresh_token)
  made.ids.push(magicIn.data.user!.id)
  // A recovery code the magic-link user asked for and has not used yet.
  expect((yield* call(() => fresh().resetPasswordForEmail(magic))).error).toBeNull()
  yield* settledMail
  const recovery = (yield* mailTo(magic)).at(-1)
  made.pendingCodes.push({ type: "recovery", email: magic, code: codeIn(recovery!) })

  // A phone sign-up (SMS autoconfirm) and an anonymous user.
  const phone = uniquePhone()
  const phoneUp = yield* call(() => fresh().signUp({ phone, password: PASSWORD }))
  expect(phoneUp.error).toBeNull()
  made.signIns.push({ label: "phone", phone, password: PASSWORD })
  made.ids.push(phoneUp.data.user!.id)
  const anonymous = yield* call(() => fresh().signInAnonymously())
  expect(anonymous.error).toBeNull()
  made.accessTokens.push({ label: "anonymous", token: anonymous.data.session!.access_token, id: anonymous.data.user!.id })
  made.ids.push(anonymous.data.user!.id)

  // GoTrue's editor changes the password GoTrue hashed.
  const editor = manifest.users.editor
  const editorClient = fresh()
  expect((yield* call(() => editorClient.signInWithPassword({ email: editor.email, password: editor.password }))).error).toBeNull()
  const newPassword = `${PASSWORD}-changed`
  expect((yield* call(() => editorClient.updateUser({ password: newPassword }))).error).toBeNull()
  made.editorOldPassword = editor.password
  made.signIns.push({ label: "editor (changed password)", email: editor.email, password: newPassword })

  // An admin-made user and an invited one who accepts and sets a password.
  const made1 = uniqueEmail("back-admin")
  const created = yield* call(() => admin.admin.createUser({ email: made1, password: PASSWORD, email_confirm: true }))
  expect(created.error).toBeNull()
  made.signIns.push({ label: "admin-created", email: made1, password: PASSWORD })
  made.ids.push(created.data.user!.id)
  const invited = uniqueEmail("back-invited")
  expect((yield* call(() => admin.admin.inviteUserByEmail(invited))).error).toBeNull()
  yield* settledMail
  const [inviteMail] = yield* mailTo(invited)
  const inviteClient = fresh()
  const accepted = yield* call(() => inviteClient.verifyOtp({ email: invited, token: codeIn(inviteMail!), type: "invite" }))
  expect(accepted.error).toBeNull()
  expect((yield* call(() => inviteClient.updateUser({ password: PASSWORD }))).error).toBeNull()
  made.signIns.push({ label: "invited", email: invited, password: PASSWORD })
  made.ids.push(accepted.data.user!.id)

  // A user who enrols TOTP and verifies it (an aal2 session).
  const totpEmail = uniqueEmail("back-totp")
  const totpClient = authClient(url).client
  yield* call(() => admin.admin.createUser({ email: totpEmail, password: PASSWORD, email_confirm: true }))
  expect((yield* call(() => totpClient.signInWithPassword({ email: totpEmail, password: PASSWORD }))).error).toBeNull()
  const enrolled = yield* call(() => totpClient.mfa.enroll({ factorType: "totp", friendlyName: "phone app" }))
  expect(enrolled.error).toBeNull()
  const factor = enrolled.data as { id: string; totp: { secret: string } }
  const stepped = yield* call(() => totpClient.mfa.challengeAndVerify({ factorId: factor.id, code: totpCode(factor.totp.secret) }))
  expect(stepped.error).toBeNull()
  made.totp = { email: totpEmail, password: PASSWORD, secret: factor.totp.secret, factorId: factor.id }
  made.signIns.push({ label: "totp", email: totpEmail, password: PASSWORD })

  // Refreshes: GoTrue's sessions (phone and anonymous users of the fixture) and Gatehouse's own.
  for (const token of [manifest.users.phone_user.refresh_token, manifest.users.anonymous.refresh_token]) {
    const refreshed = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token } })
    expect(refreshed.status, refreshed.text).toBe(200)
    made.refreshTokens.push(refreshed.json.refresh_token)
  }
  const first = made.refreshTokens.shift()!
  const rotated = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: first } })
  expect(rotated.status, rotated.text).toBe(200)
  made.refreshTokens.push(rotated.json.refresh_token)
  made.signIns.push({ label: "GoTrue's password_user", email: manifest.users.password_user.email, password: manifest.users.password_user.password })
  made.signIns.push({ label: "GoTrue's phone_user", phone: manifest.users.phone_user.phone, password: manifest.users.phone_user.password })
  made.signIns.push({ label: "GoTrue's mfa_user", email: manifest.users.mfa_user.email, password: manifest.users.mfa_user.password })

  // A ban and a soft delete of users Gatehouse made.
  for (const which of ["banned", "deleted"] as const) {
    const email = uniqueEmail(`back-${which}`)
    const user = yield* call(() => admin.admin.createUser({ email, password: PASSWORD, email_confirm: true }))
    expect(user.error).toBeNull()
    const done = which === "banned"
      ? yield* call(() => admin.admin.updateUserById(user.data.user!.id, { ban_duration: "240h" }))
      : yield* call(() => admin.admin.deleteUser(user.data.user!.id, true))
    expect(done.error).toBeNull()
    made[which] = { email, password: PASSWORD }
  }
})

/** The real GoTrue on the fixture's database (test/support/RealGoTrue), configured as shared/tools/gotrue/main.env. */
const GoTrue = Layer.scoped(
  ServerUrl,
  Effect.gen(function*() {
    const { url } = yield* startGoTrue(yield* FixtureUrl, {
      GOTRUE_SITE_URL: "http://localhost:3000",
      GOTRUE_JWT_SECRET: manifest.jwt_secret,
      GOTRUE_JWT_EXP: "3600",
      GOTRUE_JWT_AUD: "authenticated",
      GOTRUE_JWT_DEFAULT_GROUP_NAME: "authenticated",
      GOTRUE_JWT_ADMIN_ROLES: "service_role,supabase_admin",
      GOTRUE_EXTERNAL_EMAIL_ENABLED: "true",
      GOTRUE_EXTERNAL_PHONE_ENABLED: "true",
      GOTRUE_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
      GOTRUE_MAILER_AUTOCONFIRM: "true",
      GOTRUE_SMS_AUTOCONFIRM: "true",
      GOTRUE_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: "true",
      GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10",
      GOTRUE_MFA_TOTP_ENROLL_ENABLED: "true",
      GOTRUE_MFA_TOTP_VERIFY_ENABLED: "true",
      GOTRUE_RATE_LIMIT_TOKEN_REFRESH: "100000",
      GOTRUE_RATE_LIMIT_VERIFY: "100000",
      GOTRUE_RATE_LIMIT_OTP: "100000"
    })
    return url
  })
)

describe.skipIf(skipped)("the way back: GoTrue v2.196 on a database after a period on Gatehouse", () => {
  layer(OverFixture, { timeout: 300_000, excludeTestServices: true })((it) => {
    it.effect("a period on Gatehouse: sign-ups, magic link, phone, anonymous, password change, admin, invite, TOTP, refreshes, ban, soft delete", () =>
      periodOnGatehouse.pipe(Effect.provide(TestServerOver(ENV))), { timeout: 120_000 })

    it.effect("doctor, Gatehouse stopped: GoTrue can read every row; Gatehouse's live sessions are the one note", () =>
      Effect.gen(function*() {
        const findings = yield* (yield* GoTrueReadableRepo).findings(testConfig(ENV).db.namespace, new Date())
        expect(findings.filter((f) => f._tag !== "SessionsNotRefreshable" && (f._tag.startsWith("Missing") || ("rows" in f && f.rows > 0))))
          .toStrictEqual([])
        expect(doctorVerdict(findings).exitCode).toBe(0)
        const note = findings.find((f) => f._tag === "SessionsNotRefreshable")
        expect(note !== undefined && note._tag === "SessionsNotRefreshable" && note.sessions).toBeGreaterThan(0)
      }).pipe(Effect.provide(GoTrueReadableRepo.Default)))

    it.effect("export-sessions writes every live Gatehouse session's key and counter; doctor's note is gone, and a second run changes nothing", () =>
      Effect.gen(function*() {
        const key = refreshTokenKey(manifest.jwt_secret)
        const namespace = testConfig(ENV).db.namespace
        const counts = yield* exportSessions(key, namespace, new Date())
        expect(counts.exported).toBeGreaterThanOrEqual(made.refreshTokens.length)
        expect(counts.firstForm).toBe(0)
        // GoTrue's own sessions that were never refreshed here keep their 12-character tokens.
        expect(counts.gotrueTokens).toBeGreaterThan(0)
        const findings = yield* (yield* GoTrueReadableRepo).findings(namespace, new Date())
        expect(findings.find((f) => f._tag === "SessionsNotRefreshable")).toEqual({ _tag: "SessionsNotRefreshable", sessions: 0 })
        const sql = yield* SqlClient.SqlClient
        const written = () => sql<{ readonly id: string; readonly key: string; readonly counter: string }>`
          SELECT id::text, refresh_token_hmac_key AS key, refresh_token_counter::text AS counter FROM auth.sessions
          WHERE refresh_token_hmac_key IS NOT NULL ORDER BY id`
        const before = yield* written()
        expect(before).toHaveLength(counts.exported)
        expect(yield* exportSessions(key, namespace, new Date())).toEqual(counts)
        expect(yield* written()).toEqual(before)
      }).pipe(Effect.provide(GoTrueReadableRepo.Default)))

    it.layer(GoTrue, { timeout: 60_000 })((it) => {
      it.effect("every user Gatehouse made or changed, and GoTrue's own, signs in at GoTrue; GET /user answers with GoTrue's token", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          for (const user of made.signIns) {
            const client = authClient(url).client
            const signedIn = yield* call(() =>
              user.phone !== undefined
                ? client.signInWithPassword({ phone: user.phone, password: user.password })
                : client.signInWithPassword({ email: user.email!, password: user.password }))
            expect(signedIn.error, user.label).toBeNull()
            const me = yield* raw(url, "/user", { bearer: signedIn.data.session!.access_token })
            expect(me.status, `${user.label}: ${me.text}`).toBe(200)
            expect(me.json.id).toBe(signedIn.data.user!.id)
          }
          const old = yield* call(() => authClient(url).client.signInWithPassword({ email: manifest.users.editor.email, password: made.editorOldPassword }))
          expect(old.error?.code).toBe("invalid_credentials")
        }))

      it.effect("the banned user is refused, the soft-deleted one too, the unconfirmed one must confirm", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const tryIn = (who: { email: string; password: string }) => call(() => authClient(url).client.signInWithPassword(who))
          expect((yield* tryIn(made.banned)).error?.code).toBe("user_banned")
          expect((yield* tryIn(made.deleted)).error?.code).toBe("invalid_credentials")
          expect((yield* tryIn(made.unconfirmed)).error?.code).toBe("email_not_confirmed")
        }))

      it.effect("codes Gatehouse mailed (a sign-up confirmation, a recovery) verify at GoTrue, which then signs the user in", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          expect(made.pendingCodes.map((pending) => pending.type)).toEqual(["signup", "recovery"])
          for (const { code, email, type } of made.pendingCodes) {
            const verified = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type }))
            expect(verified.error, `${type}: ${verified.error?.message}`).toBeNull()
            expect(verified.data.user?.email).toBe(email)
            expect((yield* raw(url, "/user", { bearer: verified.data.session!.access_token })).status).toBe(200)
          }
          // Confirmed at GoTrue, the user Gatehouse left unconfirmed signs in with their password.
          const signedIn = yield* call(() => authClient(url).client.signInWithPassword(made.unconfirmed))
          expect(signedIn.error).toBeNull()
        }))

      it.effect("access tokens Gatehouse issued (magic link, anonymous) are accepted by GoTrue's GET /user", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          for (const { id, label, token } of made.accessTokens) {
            const me = yield* raw(url, "/user", { bearer: token })
            expect(me.status, `${label}: ${me.text}`).toBe(200)
            expect(me.json.id).toBe(id)
          }
        }))

      it.effect("GoTrue exchanges every refresh token Gatehouse issued (export-sessions carried them), and rotates on; its own rotate", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          expect(made.refreshTokens.length).toBeGreaterThan(0)
          for (const token of made.refreshTokens) {
            const exchanged = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token } })
            expect(exchanged.status, exchanged.text).toBe(200)
            // GoTrue goes on in its signed form, counting from the counter export-sessions wrote.
            const next = parseSignedRefreshToken(exchanged.json.refresh_token)
            expect(next).toMatchObject({ sessionId: parseSignedRefreshToken(token)!.sessionId, counter: parseSignedRefreshToken(token)!.counter + 1n })
            const again = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: exchanged.json.refresh_token } })
            expect(again.status, again.text).toBe(200)
            made.gotrueSignedToken = again.json.refresh_token
          }
          const client = authClient(url).client
          const signedIn = yield* call(() => client.signInWithPassword({ email: made.signIns[0]!.email!, password: PASSWORD }))
          let token = signedIn.data.session!.refresh_token
          for (let i = 0; i < 2; i++) {
            const rotated = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token } })
            expect(rotated.status, rotated.text).toBe(200)
            token = rotated.json.refresh_token
          }
          made.gotrueRefreshToken = token
        }))

      it.effect("the TOTP user enrolled at Gatehouse is aal1 with aal2 next at GoTrue, and a code verifies there", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const client = authClient(url).client
          expect((yield* call(() => client.signInWithPassword({ email: made.totp.email, password: made.totp.password }))).error).toBeNull()
          const level = yield* call(() => client.mfa.getAuthenticatorAssuranceLevel())
          expect([level.data?.currentLevel, level.data?.nextLevel]).toEqual(["aal1", "aal2"])
          const verified = yield* call(() => client.mfa.challengeAndVerify({ factorId: made.totp.factorId, code: totpCode(made.totp.secret) }))
          expect(verified.error).toBeNull()
          expect((yield* call(() => client.mfa.getAuthenticatorAssuranceLevel())).data?.currentLevel).toBe("aal2")
        }))

      it.effect("GoTrue's admin list includes every user Gatehouse made", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const listed = yield* call(() => adminOf(url).admin.listUsers({ page: 1, perPage: 1000 }))
          expect(listed.error).toBeNull()
          const ids = new Set(listed.data.users.map((u) => u.id))
          for (const id of made.ids) expect(ids.has(id)).toBe(true)
        }))

    })

    it.effect("and back to Gatehouse: its migrations run over what GoTrue left, and GoTrue's refresh token refreshes there", () =>
      Effect.gen(function*() {
        yield* Effect.orDie(migrate({ namespace: testConfig(ENV).db.namespace }))
        const url = yield* ServerUrl
        expect(made.gotrueRefreshToken).toMatch(/^[a-z0-9]{12}$/)
        const refreshed = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: made.gotrueRefreshToken } })
        expect(refreshed.status, refreshed.text).toBe(200)
        expect((yield* raw(url, "/user", { bearer: refreshed.json.access_token })).status).toBe(200)
        // A session Gatehouse started, carried to GoTrue and refreshed there in GoTrue's signed form, comes back.
        const carried = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: made.gotrueSignedToken } })
        expect(carried.status, carried.text).toBe(200)
        expect(isGatehouseRefreshToken(carried.json.refresh_token, manifest.jwt_secret)).toBe(true)
        // Rotated on at Gatehouse, the session no longer holds the key export-sessions wrote.
        const sql = yield* SqlClient.SqlClient
        const carriedSession = parseSignedRefreshToken(carried.json.refresh_token)!.sessionId
        const keyOf = (id: string) => Effect.map(sql<{ readonly key: string | null }>`
          SELECT refresh_token_hmac_key AS key FROM auth.sessions WHERE id = ${id}`, (rows) => rows[0]?.key)
        expect(yield* keyOf(carriedSession)).toEqual(expect.any(String))
        const onward = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: carried.json.refresh_token } })
        expect(onward.status, onward.text).toBe(200)
        expect(yield* keyOf(carriedSession)).toBeNull()

        // The token Gatehouse issued before the switch, which GoTrue refreshed past (its row never revoked), is judged
        // by GoTrue's counter: spent. Past the reuse interval it is reuse, and the session ends.
        const stale = made.refreshTokens[0]!
        const staleSession = parseSignedRefreshToken(stale)!.sessionId
        expect(staleSession).not.toBe(carriedSession)
        // As if all this had happened a while ago: the row made before the switch, GoTrue's last refresh a minute back.
        yield* sql`UPDATE auth.refresh_tokens SET created_at = created_at - interval '10 minutes' WHERE session_id = ${staleSession}`
        yield* sql`UPDATE auth.sessions SET refreshed_at = refreshed_at - interval '1 minute' WHERE id = ${staleSession}`
        const reused = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: stale } })
        expect([reused.status, reused.json.error_code]).toEqual([400, "refresh_token_already_used"])
        expect(yield* sql`SELECT 1 FROM auth.sessions WHERE id = ${staleSession}`).toHaveLength(0)
        const editor = made.signIns.find((u) => u.label.startsWith("editor"))!
        const signedIn = yield* call(() => authClient(url).client.signInWithPassword({ email: editor.email!, password: editor.password }))
        expect(signedIn.error).toBeNull()
      }).pipe(Effect.provide(TestServerOver(ENV))))
  })
})
