/**
 * GoTrue's signed refresh tokens ("algorithm v2") in a database adopted from GoTrue v2.196: sessions of the fixture
 * (shared/fixtures/gotrue-v2.196) are given a signing key and a counter as GoTrue writes them when it moves a session
 * to v2 (its classic token rows revoked), and tokens are signed for them here as GoTrue signs them. Each is exchanged
 * once for a Gatehouse token, with GoTrue's counter rules before that.
 *
 * PostgreSQL only (the fixture loads through psql); without DATABASE_URL the file is skipped.
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import {
  encodeSignedRefreshToken,
  isSignedWith,
  parseSignedRefreshToken,
  signingKeyOf
} from "../../../src/auth/domain/GoTrueSignedRefreshToken.js"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { isGatehouseRefreshToken } from "../../support/GatehouseTokens.js"
import { gotrueFixtureMissing, gotrueManifest, loadGoTrueFixture } from "../../support/GoTrueFixture.js"
import { projectClient } from "../../support/SupabaseJs.js"
import { realGoTrueMissing, startGoTrue } from "../../support/RealGoTrue.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import { call, decodeJwt, raw } from "./AcceptanceKit.js"

const manifest = gotrueManifest
const ENV = { AUTH_JWT_SECRET: manifest?.jwt_secret ?? "" }

const OverGoTrueDatabase = Layer.unwrapScoped(
  Effect.map(loadGoTrueFixture(Option.getOrElse(externalDatabaseUrl, () => "")), ({ url }) => {
    const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(ENV).db.namespace })))
    return TestServerOver(ENV).pipe(
      Layer.provideMerge(Migrated),
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 }))
    )
  })
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

/** What GoTrue does to a session it moves to signed tokens: a random 32-byte key, a counter, its classic rows revoked. */
const signSession = (userId: string, counter: bigint) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [session] = yield* sql<{ readonly id: string }>`SELECT id FROM auth.sessions WHERE user_id = ${userId} ORDER BY created_at LIMIT 1`
    const key = randomBytes(32)
    yield* sql`UPDATE auth.sessions SET refresh_token_hmac_key = ${key.toString("base64url")},
      refresh_token_counter = ${counter.toString()}::bigint WHERE id = ${session!.id}`
    yield* sql`UPDATE auth.refresh_tokens SET revoked = true WHERE session_id = ${session!.id}`
    return { sessionId: session!.id, key, token: (n: bigint) => encodeSignedRefreshToken(key, session!.id, n) }
  })

const counterOf = (sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly counter: string | null }>`
      SELECT refresh_token_counter::text AS counter FROM auth.sessions WHERE id = ${sessionId}`
    return rows.length === 0 ? undefined : rows[0]!.counter
  })

const refresh = (token: string) =>
  Effect.flatMap(ServerUrl, (url) => raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token } }))

describe.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)("GoTrue's signed refresh tokens in an adopted database", () => {
  layer(OverGoTrueDatabase, { timeout: 180_000, excludeTestServices: true })((it) => {
    it.effect("the columns GoTrue made keep their comments; Gatehouse's migration changed nothing of them", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const columns = yield* sql<{ readonly name: string; readonly type: string; readonly comment: string | null }>`
          SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, col_description(a.attrelid, a.attnum) AS comment
          FROM pg_attribute a WHERE a.attrelid = 'auth.sessions'::regclass
            AND a.attname IN ('refresh_token_hmac_key', 'refresh_token_counter') ORDER BY a.attname`
        expect(columns).toEqual([
          { name: "refresh_token_counter", type: "bigint", comment: "Holds the ID (counter) of the last issued refresh token." },
          { name: "refresh_token_hmac_key", type: "text", comment: "Holds a HMAC-SHA256 key used to sign refresh tokens for this session." }
        ])
      }))

    it.effect("a signed token is exchanged for a Gatehouse token and counted used; presented again, the same token", () =>
      Effect.gen(function*() {
        const user = manifest.users.phone_user
        const signed = yield* signSession(user.id, 5n)
        const first = yield* refresh(signed.token(5n))
        expect(first.status, first.text).toBe(200)
        expect(first.json.user.id).toBe(user.id)
        expect(isGatehouseRefreshToken(first.json.refresh_token, manifest.jwt_secret)).toBe(true)
        expect(decodeJwt(first.json.access_token).payload).toMatchObject({ sub: user.id, session_id: signed.sessionId })
        // As GoTrue counts it: a token at 5 was used, so GoTrue (were the project to switch back) sees 5 as spent.
        expect(yield* counterOf(signed.sessionId)).toBe("6")

        // The client lost the answer and presents the signed token again: the same Gatehouse token.
        const again = yield* refresh(signed.token(5n))
        expect(again.status, again.text).toBe(200)
        expect(again.json.refresh_token).toBe(first.json.refresh_token)
        expect(yield* counterOf(signed.sessionId)).toBe("6")

        // From here the session rotates as Gatehouse's do.
        const rotated = yield* refresh(first.json.refresh_token)
        expect(rotated.status, rotated.text).toBe(200)
        expect(rotated.json.refresh_token).not.toBe(first.json.refresh_token)
        const me = yield* raw(yield* ServerUrl, "/user", { bearer: rotated.json.access_token })
        expect(me.status).toBe(200)

        // The signed token once more, after the session went on: within the reuse interval of that refresh (tabs
        // refreshing at once, in GoTrue's words) it gets the session's current token; past it, it is reuse.
        const concurrent = yield* refresh(signed.token(5n))
        expect(concurrent.status, concurrent.text).toBe(200)
        expect(concurrent.json.refresh_token).toBe(rotated.json.refresh_token)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE auth.sessions SET refreshed_at = refreshed_at - interval '1 minute' WHERE id = ${signed.sessionId}`
        const reused = yield* refresh(signed.token(5n))
        expect([reused.status, reused.json.error_code]).toEqual([400, "refresh_token_already_used"])
        expect([(yield* refresh(rotated.json.refresh_token)).json.error_code]).toEqual(["refresh_token_not_found"])
      }))

    it.effect("supabase-js refreshes a session by its signed token and goes on with Gatehouse's", () =>
      Effect.gen(function*() {
        const user = manifest.users.editor
        const signed = yield* signSession(user.id, 0n)
        const client = yield* projectClient()
        const { data, error } = yield* call(() => client.auth.refreshSession({ refresh_token: signed.token(0n) }))
        expect(error).toBeNull()
        expect(data.session?.user.id).toBe(user.id)
        expect(isGatehouseRefreshToken(data.session?.refresh_token, manifest.jwt_secret)).toBe(true)
        const me = yield* call(() => client.auth.getUser())
        expect(me.data.user?.id).toBe(user.id)
        const next = yield* call(() => client.auth.refreshSession())
        expect(next.error).toBeNull()
        expect(next.data.session?.refresh_token).not.toBe(data.session?.refresh_token)
      }))

    it.effect("before Gatehouse has exchanged one, a token one behind (a lost answer) gets GoTrue's current token back", () =>
      Effect.gen(function*() {
        // pending_recovery has one session GoTrue started, never refreshed.
        const signed = yield* signSession(manifest.users.pending_recovery.id, 3n)
        const lost = yield* refresh(signed.token(2n))
        expect(lost.status, lost.text).toBe(200)
        expect(lost.json.refresh_token).toBe(signed.token(3n))
        expect(yield* counterOf(signed.sessionId)).toBe("3")
        const exchanged = yield* refresh(lost.json.refresh_token)
        expect(exchanged.status, exchanged.text).toBe(200)
        expect(isGatehouseRefreshToken(exchanged.json.refresh_token, manifest.jwt_secret)).toBe(true)
      }))

    it.effect("the same signed token presented eight times at once: one exchange, and every answer the same Gatehouse token", () =>
      Effect.gen(function*() {
        const signed = yield* signSession(manifest.users.pending_magiclink.id, 4n)
        const answers = yield* Effect.all(Array.from({ length: 8 }, () => refresh(signed.token(4n))), { concurrency: "unbounded" })
        expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200))
        expect(new Set(answers.map((answer) => answer.json.refresh_token)).size).toBe(1)
        expect(yield* counterOf(signed.sessionId)).toBe("5")
      }))

    it.effect("an older token outside the reuse interval is reuse: 400 refresh_token_already_used, and the session ends", () =>
      Effect.gen(function*() {
        const user = manifest.users.anonymous
        const signed = yield* signSession(user.id, 7n)
        // The fixture's session was last refreshed (or started) days ago: no refresh is concurrent with it.
        const reused = yield* refresh(signed.token(5n))
        expect([reused.status, reused.json.error_code, reused.json.msg])
          .toEqual([400, "refresh_token_already_used", "Invalid Refresh Token: Already Used"])
        expect(yield* counterOf(signed.sessionId)).toBeUndefined()
        const current = yield* refresh(signed.token(7n))
        expect([current.status, current.json.error_code]).toEqual([400, "refresh_token_not_found"])
      }))

    it.effect("a counter ahead of the session's is 400 validation_failed, as GoTrue answers it", () =>
      Effect.gen(function*() {
        const signed = yield* signSession(manifest.users.password_user.id, 2n)
        const ahead = yield* refresh(signed.token(3n))
        expect([ahead.status, ahead.json.error_code, ahead.json.msg])
          .toEqual([400, "validation_failed", "Invalid Refresh Token: Not Issued By This Server"])
        expect(yield* counterOf(signed.sessionId)).toBe("2")
      }))

    it.effect("a token not signed with the session's key, or unreadable, is unknown: 400 refresh_token_not_found", () =>
      Effect.gen(function*() {
        const signed = yield* signSession(manifest.users.password_user.id, 2n)
        const bytes = Buffer.from(signed.token(2n), "base64url")
        const signatureFlipped = Buffer.from(bytes)
        signatureFlipped[bytes.length - 10]! ^= 0x01
        const body = signatureFlipped.subarray(0, bytes.length - 4)
        const refitted = Buffer.concat([body, createHash("sha256").update(body).digest().subarray(0, 4)]).toString("base64url")
        const otherKey = encodeSignedRefreshToken(randomBytes(32), signed.sessionId, 2n)
        const otherSession = encodeSignedRefreshToken(signed.key, "00000000-0000-4000-8000-000000000000", 2n)
        for (const token of [signatureFlipped.toString("base64url"), refitted, otherKey, otherSession]) {
          const refused = yield* refresh(token)
          expect([refused.status, refused.json.error_code, refused.json.msg], token)
            .toEqual([400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found"])
        }
        expect(yield* counterOf(signed.sessionId)).toBe("2")
        // A key GoTrue encrypted (DB encryption on) cannot be opened here: the session's tokens are unknown.
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE auth.sessions SET refresh_token_hmac_key = ${JSON.stringify({ key_id: "k", alg: "aes-gcm-hkdf", nonce: "bm9uY2U", data: "ZGF0YQ" })}
          WHERE id = ${signed.sessionId}`
        const sealed = yield* refresh(signed.token(2n))
        expect([sealed.status, sealed.json.error_code]).toEqual([400, "refresh_token_not_found"])
      }))

    it.effect("a banned user's signed token is refused as the classic one is: 400 user_banned", () =>
      Effect.gen(function*() {
        const user = manifest.users.banned
        const classic = yield* refresh(user.refresh_token_before_ban)
        const signed = yield* signSession(user.id, 0n)
        const refused = yield* refresh(signed.token(0n))
        expect([refused.status, refused.json.error_code, refused.json.msg]).toEqual([classic.status, classic.json.error_code, classic.json.msg])
        expect([refused.status, refused.json.error_code]).toEqual([400, "user_banned"])
        expect(yield* counterOf(signed.sessionId)).toBe("0")
      }))

    it.effect("mfa_user's aal2 session refreshed by a signed token stays aal2", () =>
      Effect.gen(function*() {
        const user = manifest.users.mfa_user
        const signed = yield* signSession(user.id, 1n)
        const response = yield* refresh(signed.token(1n))
        expect(response.status, response.text).toBe(200)
        expect(decodeJwt(response.json.access_token).payload).toMatchObject({ sub: user.id, aal: "aal2" })
      }))
  })
})

const SECRET = "signed-refresh-tokens-test-secret-0123456789abcdef"

/** The real GoTrue's address, serving the same database as the Gatehouse server. */
class GoTrueUrl extends Context.Tag("test/GoTrueUrl")<GoTrueUrl, string>() {}

/**
 * A fresh database GoTrue migrated and serves, minting signed tokens for every session (algorithm 2, every session
 * upgraded), with Gatehouse's migrations run over it and a Gatehouse server on it too.
 */
const BesideRealGoTrue = Layer.unwrapScoped(
  Effect.gen(function*() {
    const { url } = yield* freshDatabaseUrl(Option.getOrElse(externalDatabaseUrl, () => ""))
    const gotrue = yield* startGoTrue(url, {
      GOTRUE_JWT_SECRET: SECRET,
      GOTRUE_JWT_EXP: "3600",
      GOTRUE_JWT_AUD: "authenticated",
      GOTRUE_JWT_DEFAULT_GROUP_NAME: "authenticated",
      GOTRUE_SITE_URL: "http://127.0.0.1:3000",
      GOTRUE_DISABLE_SIGNUP: "false",
      GOTRUE_EXTERNAL_EMAIL_ENABLED: "true",
      GOTRUE_MAILER_AUTOCONFIRM: "true",
      GOTRUE_PASSWORD_MIN_LENGTH: "6",
      GOTRUE_RATE_LIMIT_TOKEN_REFRESH: "100000",
      GOTRUE_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: "true",
      GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: "10",
      GOTRUE_SECURITY_REFRESH_TOKEN_ALGORITHM_VERSION: "2",
      GOTRUE_SECURITY_REFRESH_TOKEN_UPGRADE_PERCENTAGE: "100"
    })
    const env = { AUTH_JWT_SECRET: SECRET }
    const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(env).db.namespace })))
    return TestServerOver(env).pipe(
      Layer.provideMerge(Migrated),
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
      Layer.provideMerge(Layer.succeed(GoTrueUrl, gotrue.url))
    )
  })
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

const atGoTrue = (path: string, body: unknown) => Effect.flatMap(GoTrueUrl, (url) => raw(url, path, { body }))

/** A user signed up at GoTrue, signed in there: a new session and GoTrue's first signed token for it. */
const gotrueSession = (email: string) =>
  Effect.gen(function*() {
    const password = "secret-123456"
    const signup = yield* atGoTrue("/signup", { email, password })
    expect(signup.status, signup.text).toBe(200)
    const signIn = yield* atGoTrue("/token?grant_type=password", { email, password })
    expect(signIn.status, signIn.text).toBe(200)
    return { token: signIn.json.refresh_token as string, sessionId: decodeJwt(signIn.json.access_token).payload.session_id as string }
  })

const signingKey = (sessionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly key: string | null }>`SELECT refresh_token_hmac_key AS key FROM auth.sessions WHERE id = ${sessionId}`
    return signingKeyOf(row!.key)!
  })

describe.skipIf(Option.isNone(externalDatabaseUrl) || realGoTrueMissing !== undefined)(
  realGoTrueMissing ?? "signed refresh tokens the real GoTrue minted",
  () => {
    layer(BesideRealGoTrue, { timeout: 180_000, excludeTestServices: true })((it) => {
      it.effect("GoTrue's tokens read here, and Gatehouse signs byte for byte as GoTrue does", () =>
        Effect.gen(function*() {
          const { sessionId, token } = yield* gotrueSession("mint@example.com")
          const next = yield* atGoTrue("/token?grant_type=refresh_token", { refresh_token: token })
          expect(next.status, next.text).toBe(200)
          const key = yield* signingKey(sessionId)
          expect(key.length).toBe(32)
          for (const [presented, counter] of [[token, 0n], [next.json.refresh_token as string, 1n]] as const) {
            const parsed = parseSignedRefreshToken(presented)
            expect([parsed?.sessionId, parsed?.counter]).toEqual([sessionId, counter])
            expect(isSignedWith(parsed!, key)).toBe(true)
            expect(encodeSignedRefreshToken(key, sessionId, counter)).toBe(presented)
          }
        }))

      it.effect("Gatehouse exchanges GoTrue's current token; GoTrue then sees it used once and answers its next", () =>
        Effect.gen(function*() {
          const { sessionId, token } = yield* gotrueSession("exchange@example.com")
          const current = (yield* atGoTrue("/token?grant_type=refresh_token", { refresh_token: token })).json.refresh_token as string
          const exchanged = yield* refresh(current)
          expect(exchanged.status, exchanged.text).toBe(200)
          expect(isGatehouseRefreshToken(exchanged.json.refresh_token, SECRET)).toBe(true)
          expect(exchanged.json.user.email).toBe("exchange@example.com")
          expect(yield* counterOf(sessionId)).toBe("2")
          expect((yield* refresh(current)).json.refresh_token).toBe(exchanged.json.refresh_token)
          expect((yield* refresh(exchanged.json.refresh_token)).status).toBe(200)

          // The way back: GoTrue takes the exchanged token for a lost answer and hands out the token after it.
          const back = yield* atGoTrue("/token?grant_type=refresh_token", { refresh_token: current })
          expect(back.status, back.text).toBe(200)
          expect(back.json.refresh_token).toBe(encodeSignedRefreshToken(yield* signingKey(sessionId), sessionId, 2n))
        }))

      it.effect("an older token just after GoTrue refreshed (tabs refreshing at once) gets GoTrue's current token back", () =>
        Effect.gen(function*() {
          const { token } = yield* gotrueSession("tabs@example.com")
          const first = (yield* atGoTrue("/token?grant_type=refresh_token", { refresh_token: token })).json.refresh_token as string
          const second = (yield* atGoTrue("/token?grant_type=refresh_token", { refresh_token: first })).json.refresh_token as string
          // Two behind, within the reuse interval of GoTrue's refresh (refreshed_at, a timestamp without time zone).
          const concurrent = yield* refresh(token)
          expect(concurrent.status, concurrent.text).toBe(200)
          expect(concurrent.json.refresh_token).toBe(second)
          const exchanged = yield* refresh(second)
          expect(exchanged.status, exchanged.text).toBe(200)
          expect(isGatehouseRefreshToken(exchanged.json.refresh_token, SECRET)).toBe(true)
        }))
    })
  }
)
