/**
 * Token introspection (RFC 7662, POST /oauth/introspect) and the revocation feed (GET /admin/revoked-sessions) for
 * resource servers and API gateways (issue 31): over the real server, apps signing in and out with supabase-js and
 * auth-js, a resource server asking with openid-client as an OAuth client or with the service_role key, and every way
 * a session ends showing up in the feed, page by page.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import * as oidc from "openid-client"
import pg from "pg"
import { authTables } from "../../../src/auth/AuthTables.js"
import { EndedSessionsRepo } from "../../../src/auth/sessions/EndedSessionsRepo.js"
import { ENDED_SESSION_MARGIN, endedSessionsTask } from "../../../src/auth/sessions/ExpiredSessions.js"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { PlatformConfig } from "../../../src/config/PlatformConfig.js"
import { sweepPass } from "../../../src/platform/process/Housekeeping.js"
import { supabaseClient } from "../../support/SupabaseJs.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { baseTestEnv, ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  decodeJwt,
  nowSeconds,
  PASSWORD,
  raw,
  signHs256,
  uniqueEmail,
  unsigned,
  withPayload
} from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const CALLBACK = "https://client.example.com/callback"
const SECRET = baseTestEnv["AUTH_JWT_SECRET"]!
const anonKey = signHs256({ iss: "supabase", role: "anon", iat: nowSeconds() }, SECRET)
const serviceKey = adminJwt()
const asService = { authorization: `Bearer ${serviceKey}` }

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`

/** POST /oauth/introspect with a form, as RFC 7662 says a resource server sends it. */
const introspect = (url: string, form: Record<string, string>, headers: Record<string, string> = asService, path = "/oauth/introspect") =>
  raw(url, path, { body: new URLSearchParams(form).toString(), headers: { "content-type": "application/x-www-form-urlencoded", ...headers } })

/** A confirmed user signed in with supabase-js (autoconfirm): the client and its session. */
const signedUp = (url: string) =>
  Effect.gen(function*() {
    const client = supabaseClient(url, anonKey)
    const email = uniqueEmail("introspect")
    const { data, error } = yield* call(() => client.auth.signUp({ email, password: PASSWORD }))
    expect(error).toBeNull()
    return { client, email, user: data.user!, session: data.session! }
  })

/** A second sign-in of the same user: another session. */
const signIn = (url: string, email: string) =>
  Effect.gen(function*() {
    const client = supabaseClient(url, anonKey)
    const { data, error } = yield* call(() => client.auth.signInWithPassword({ email, password: PASSWORD }))
    expect(error).toBeNull()
    return { client, session: data.session! }
  })

const serviceClient = (url: string) => supabaseClient(url, serviceKey).auth.admin

const sessionOf = (accessToken: string): string => decodeJwt(accessToken).payload["session_id"]

interface FeedPage {
  readonly sessions: ReadonlyArray<{ readonly session_id: string; readonly user_id: string; readonly ended_at: string }>
  readonly next: string
  readonly has_more: boolean
}

const feed = (url: string, query: Record<string, string> = {}, headers: Record<string, string> = asService) =>
  raw(url, `/admin/revoked-sessions?${new URLSearchParams(query)}`, { headers })

/** Every page from `since`, `limit` rows at a time, following the cursors until a page is not full. */
const wholeFeed = (url: string, since: string, limit: number) =>
  Effect.gen(function*() {
    const pages: Array<FeedPage> = []
    let cursor = since
    for (let i = 0; i < 100; i++) {
      const answer = yield* feed(url, { since: cursor, limit: String(limit) })
      expect(answer.status).toBe(200)
      const page = answer.json as FeedPage
      expect(page.sessions.length).toBeLessThanOrEqual(limit)
      pages.push(page)
      cursor = page.next
      if (!page.has_more) break
    }
    return { rows: pages.flatMap((page) => page.sessions), pages, next: cursor }
  })

const env = {
  AUTH_SITE_URL: SITE,
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_OAUTH_SERVER_ENABLED: "true",
  AUTH_OAUTH_SERVER_AUTHORIZATION_PATH: "/oauth/consent"
}

describe("token introspection and the revocation feed", () => {
  acceptance(env)((it) => {
    it.effect("a live access token is active with its claims, at the root and under /auth/v1; after signOut it is inactive at once", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client, email, session, user } = yield* signedUp(url)
        const claims = decodeJwt(session.access_token).payload
        const answer = yield* introspect(url, { token: session.access_token, token_type_hint: "access_token" })
        expect(answer.status).toBe(200)
        expect(answer.headers.get("cache-control")).toBe("no-store")
        expect(answer.json).toEqual({
          active: true,
          token_type: "access_token",
          sub: user.id,
          exp: claims["exp"],
          iat: claims["iat"],
          iss: claims["iss"],
          aud: "authenticated",
          session_id: claims["session_id"],
          aal: "aal1",
          role: "authenticated",
          username: email
        })
        const prefixed = yield* introspect(url, { token: session.access_token }, asService, "/auth/v1/oauth/introspect")
        expect(prefixed.json).toEqual(answer.json)

        // The JWT itself still verifies until it expires; the session is what ended.
        expect((yield* call(() => client.auth.signOut())).error).toBeNull()
        const after = yield* introspect(url, { token: session.access_token })
        expect(after.status).toBe(200)
        expect(after.json).toEqual({ active: false })
      }))

    it.effect("refresh-token reuse ends the session: every access token of it turns inactive", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client, session } = yield* signedUp(url)
        const first = session.refresh_token
        expect((yield* call(() => client.auth.refreshSession())).error).toBeNull()
        const latest = yield* call(() => client.auth.refreshSession())
        expect(latest.error).toBeNull()
        const current = latest.data.session!.access_token
        expect((yield* introspect(url, { token: current })).json).toMatchObject({ active: true })

        // The grandparent, outside the forgiven immediate parent: reuse, and the session ends.
        const reused = yield* call(() => authClient(url).client.refreshSession({ refresh_token: first }))
        expect(reused.error).toMatchObject({ status: 400, code: "refresh_token_already_used" })
        expect((yield* introspect(url, { token: current })).json).toEqual({ active: false })
        expect((yield* introspect(url, { token: session.access_token })).json).toEqual({ active: false })
        // A refresh token is never introspectable: nothing is said of it, live or not.
        expect((yield* introspect(url, { token: latest.data.session!.refresh_token, token_type_hint: "refresh_token" })).json).toEqual({ active: false })
      }))

    it.effect("junk, forged, expired and non-access tokens are inactive with nothing more, never a 500; a missing token is 400", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { session, user } = yield* signedUp(url)
        const claims = decodeJwt(session.access_token).payload
        const junk = [
          "x",
          "a.b.c",
          "....",
          "eyJhbGciOiJIUzI1NiJ9.e30.",
          `${Buffer.from("{\"alg\":{\"x\":1},\"kid\":[1]}").toString("base64url")}.e30.sig`,
          "\u0000\u00ff\ud83d\ude00",
          "%00%zz",
          "Bearer " + session.access_token,
          randomBytes(3000).toString("base64url"),
          unsigned(claims),
          withPayload(session.access_token, { ...claims, sub: "00000000-0000-0000-0000-000000000001" }),
          signHs256(claims, "not the server's secret"),
          signHs256({ ...claims, exp: nowSeconds() - 10 }, SECRET),
          signHs256({ ...claims, session_id: "00000000-0000-0000-0000-000000000000" }, SECRET),
          signHs256({ ...claims, session_id: "not a uuid" }, SECRET),
          signHs256({ ...claims, session_id: randomUUID() }, SECRET),
          signHs256({ ...claims, sub: "not-a-uuid" }, SECRET),
          signHs256({ ...claims, exp: undefined }, SECRET),
          signHs256({ ...claims, exp: "soon" }, SECRET),
          // An ID token: the client's, no session.
          signHs256({ iss: claims["iss"], sub: user.id, aud: randomUUID(), client_id: randomUUID(), exp: nowSeconds() + 60 }, SECRET),
          anonKey,
          serviceKey
        ]
        for (const token of junk) {
          const answer = yield* introspect(url, { token })
          expect({ token: token.slice(0, 40), status: answer.status, body: answer.json }).toEqual({ token: token.slice(0, 40), status: 200, body: { active: false } })
        }
        // JSON works too, with the same rules.
        const json = yield* raw(url, "/oauth/introspect", { body: { token: "junk" }, headers: asService })
        expect(json.json).toEqual({ active: false })

        const missing = yield* introspect(url, {})
        expect(missing.status).toBe(400)
        expect(missing.json).toEqual({ error: "invalid_request", error_description: "token is required" })
        const unreadable = yield* raw(url, "/oauth/introspect", { body: "[1,2]", headers: asService })
        expect(unreadable.status).toBe(400)
        expect(unreadable.json).toMatchObject({ error: "invalid_request" })
        const badForm = yield* raw(url, "/oauth/introspect", { body: "token=%zz", headers: { ...asService, "content-type": "application/x-www-form-urlencoded" } })
        expect(badForm.status).toBe(400)
        expect(badForm.json).toMatchObject({ error: "invalid_request" })
      }))

    it.effect("a caller that does not authenticate is 401 invalid_client: none, a user's token, the anon key, a forged key, bad client credentials", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { session } = yield* signedUp(url)
        const admin = serviceClient(url)
        const publicClient = yield* call(() => admin.oauth.createClient({ client_name: "spa", redirect_uris: [CALLBACK], client_type: "public" } as never))
        expect(publicClient.error).toBeNull()
        const confidential = yield* call(() => admin.oauth.createClient({ client_name: "api", redirect_uris: [CALLBACK] } as never))
        expect(confidential.error).toBeNull()
        const { client_id, client_secret } = confidential.data!
        const refused = [
          {},
          { authorization: `Bearer ${session.access_token}` },
          { authorization: `Bearer ${anonKey}` },
          { authorization: `Bearer ${signHs256({ role: "service_role", exp: nowSeconds() + 60 }, "not the secret")}` },
          { authorization: `Bearer ${signHs256({ role: "service_role", exp: nowSeconds() - 60 }, SECRET)}` },
          { authorization: "Bearer" },
          { apikey: serviceKey },
          { authorization: basic(client_id, "wrong") },
          { authorization: basic(client_id, "") },
          { authorization: basic(publicClient.data!.client_id, "") },
          { authorization: basic("not-a-uuid", "x") },
          { authorization: basic(randomUUID(), "x") },
          { authorization: "Basic !!!" }
        ]
        for (const headers of refused) {
          const answer = yield* introspect(url, { token: session.access_token }, headers)
          expect({ headers, status: answer.status, body: answer.json }).toEqual({
            headers,
            status: 401,
            body: { error: "invalid_client", error_description: "Client authentication failed" }
          })
        }
        const posted = [
          { client_id, client_secret: "wrong" },
          { client_id: publicClient.data!.client_id },
          { client_id: "" }
        ]
        for (const credentials of posted) {
          const answer = yield* introspect(url, { token: session.access_token, ...credentials }, {})
          expect({ credentials, status: answer.status }).toEqual({ credentials, status: 401 })
        }
        // RFC 6749 §5.2: challenged in the scheme that was tried; nothing to challenge when none was.
        expect((yield* introspect(url, { token: "x" }, { authorization: basic(client_id, "wrong") })).headers.get("www-authenticate"))
          .toBe("Basic realm=\"gatehouse\"")
        expect((yield* introspect(url, { token: "x" }, { authorization: `Bearer ${anonKey}` })).headers.get("www-authenticate"))
          .toBe("Bearer realm=\"gatehouse\"")
        expect((yield* introspect(url, { token: "x" }, {})).headers.get("www-authenticate")).toBeNull()
        // Unauthenticated, a token is never looked at: the same 401 for a junk token.
        expect((yield* introspect(url, { token: "junk" }, {})).status).toBe(401)
        // The basic client's secret in the form: the wrong method for it, as the token endpoint says.
        const wrongMethod = yield* introspect(url, { token: session.access_token, client_id, client_secret: client_secret! }, {})
        expect(wrongMethod.status).toBe(401)
      }))

    it.effect("an OAuth client's credentials (openid-client, Basic and post) introspect; its own tokens show client_id and scope", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = serviceClient(url)
        const basicClient = (yield* call(() => admin.oauth.createClient({ client_name: "resource", redirect_uris: [CALLBACK] } as never))).data!
        const postClient = (yield* call(() =>
          admin.oauth.createClient({ client_name: "resource-post", redirect_uris: [CALLBACK], token_endpoint_auth_method: "client_secret_post" } as never)
        )).data!
        expect(basicClient.token_endpoint_auth_method).toBe("client_secret_basic")
        expect(postClient.token_endpoint_auth_method).toBe("client_secret_post")

        // An app's user signs in with auth-js and approves the client: the code flow with PKCE.
        const { client: app } = authClient(url)
        const email = uniqueEmail("consent")
        const signedUpUser = yield* call(() => app.signUp({ email, password: PASSWORD }))
        expect(signedUpUser.error).toBeNull()
        const verifier = randomBytes(32).toString("base64url")
        const query = new URLSearchParams({
          client_id: basicClient.client_id,
          redirect_uri: CALLBACK,
          response_type: "code",
          scope: "email profile",
          state: "s",
          code_challenge: createHash("sha256").update(verifier).digest("base64url"),
          code_challenge_method: "S256"
        })
        const toConsent = yield* call(() => fetch(`${url}/oauth/authorize?${query}`, { redirect: "manual" }))
        const authorizationId = new URL(toConsent.headers.get("location")!).searchParams.get("authorization_id")!
        expect((yield* call(() => app.oauth.getAuthorizationDetails(authorizationId))).error).toBeNull()
        const approved = yield* call(() => app.oauth.approveAuthorization(authorizationId, { skipBrowserRedirect: true }))
        const code = new URL(approved.data!.redirect_url).searchParams.get("code")!

        const server = new oidc.Configuration(
          { issuer: "http://localhost:9999", token_endpoint: `${url}/oauth/token`, introspection_endpoint: `${url}/oauth/introspect` },
          basicClient.client_id,
          undefined,
          oidc.ClientSecretBasic(basicClient.client_secret!)
        )
        oidc.allowInsecureRequests(server)
        const tokens = yield* call(() =>
          oidc.genericGrantRequest(server, "authorization_code", { code, redirect_uri: CALLBACK, code_verifier: verifier }))
        const accessToken = tokens.access_token

        const seen = yield* call(() => oidc.tokenIntrospection(server, accessToken))
        expect(seen).toMatchObject({
          active: true,
          token_type: "access_token",
          client_id: basicClient.client_id,
          scope: "email profile",
          username: email,
          session_id: sessionOf(accessToken)
        })

        // The other client, with client_secret_post, sees the same token the same way (any authenticated client may ask).
        const postServer = new oidc.Configuration(
          { issuer: "http://localhost:9999", introspection_endpoint: `${url}/oauth/introspect` },
          postClient.client_id,
          undefined,
          oidc.ClientSecretPost(postClient.client_secret!)
        )
        oidc.allowInsecureRequests(postServer)
        expect(yield* call(() => oidc.tokenIntrospection(postServer, accessToken))).toMatchObject({ active: true, client_id: basicClient.client_id })

        // The user revokes the grant: the client's sessions end, and so does the token.
        const revoked = yield* raw(url, `/user/oauth/grants?client_id=${basicClient.client_id}`, {
          method: "DELETE",
          bearer: (yield* call(() => app.getSession())).data.session!.access_token
        })
        expect(revoked.status).toBe(204)
        expect(yield* call(() => oidc.tokenIntrospection(server, accessToken))).toEqual({ active: false })

        // A deleted client can no longer ask.
        expect((yield* call(() => admin.oauth.deleteClient(postClient.client_id))).error).toBeNull()
        const gone = yield* introspect(url, { token: accessToken, client_id: postClient.client_id, client_secret: postClient.client_secret! }, {})
        expect(gone.status).toBe(401)
      }))

    it.effect("the feed lists every session that ended after `since`, in order, page by page; each way of ending is there", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = serviceClient(url)
        // Before the mark: ended, and left out by `since`.
        const early = yield* signedUp(url)
        expect((yield* call(() => early.client.auth.signOut())).error).toBeNull()
        yield* Effect.sleep("20 millis")
        const mark = new Date().toISOString()
        yield* Effect.sleep("20 millis")

        const ended: Array<{ readonly session: string; readonly user: string; readonly how: string }> = []
        // signOut scopes: local ends one session, others the rest, global every one.
        const ada = yield* signedUp(url)
        const adaSecond = yield* signIn(url, ada.email)
        const adaThird = yield* signIn(url, ada.email)
        expect((yield* call(() => adaThird.client.auth.signOut({ scope: "local" }))).error).toBeNull()
        ended.push({ session: sessionOf(adaThird.session.access_token), user: ada.user.id, how: "local" })
        expect((yield* call(() => adaSecond.client.auth.signOut({ scope: "others" }))).error).toBeNull()
        ended.push({ session: sessionOf(ada.session.access_token), user: ada.user.id, how: "others" })
        expect((yield* call(() => adaSecond.client.auth.signOut({ scope: "global" }))).error).toBeNull()
        ended.push({ session: sessionOf(adaSecond.session.access_token), user: ada.user.id, how: "global" })

        // Refresh-token reuse.
        const bob = yield* signedUp(url)
        yield* call(() => bob.client.auth.refreshSession())
        yield* call(() => bob.client.auth.refreshSession())
        yield* call(() => authClient(url).client.refreshSession({ refresh_token: bob.session.refresh_token }))
        ended.push({ session: sessionOf(bob.session.access_token), user: bob.user.id, how: "reuse" })

        // A ban, and an admin's delete (the cascade from users).
        const cy = yield* signedUp(url)
        expect((yield* call(() => admin.updateUserById(cy.user.id, { ban_duration: "24h" }))).error).toBeNull()
        ended.push({ session: sessionOf(cy.session.access_token), user: cy.user.id, how: "ban" })
        const dee = yield* signedUp(url)
        expect((yield* call(() => admin.deleteUser(dee.user.id))).error).toBeNull()
        ended.push({ session: sessionOf(dee.session.access_token), user: dee.user.id, how: "delete" })

        for (const token of [ada.session, adaSecond.session, adaThird.session, bob.session, cy.session, dee.session]) {
          expect((yield* introspect(url, { token: token.access_token })).json).toEqual({ active: false })
        }

        const { next, pages, rows } = yield* wholeFeed(url, mark, 2)
        expect(pages.length).toBeGreaterThanOrEqual(3)
        // Other tests of this file end sessions too; the ones ended here are there, each once, in the order they ended.
        const mine = rows.filter((row) => ended.some((e) => e.session === row.session_id))
        expect(mine.map((row) => ({ session: row.session_id, user: row.user_id }))).toEqual(ended.map((e) => ({ session: e.session, user: e.user })))
        expect(rows.some((row) => row.session_id === sessionOf(early.session.access_token))).toBe(false)
        for (const row of rows) expect(Date.parse(row.ended_at)).toBeGreaterThanOrEqual(Date.parse(mark))
        expect(new Set(rows.map((row) => row.session_id)).size).toBe(rows.length)

        // Without `since`: every row kept, the early one too.
        const all = yield* wholeFeed(url, "", 1000)
        expect(all.rows.some((row) => row.session_id === sessionOf(early.session.access_token))).toBe(true)

        // The last cursor: nothing new yet; a session ended afterwards is the next page's.
        const empty = yield* feed(url, { since: next })
        expect(empty.json).toMatchObject({ sessions: [], has_more: false })
        const later = yield* signedUp(url)
        yield* call(() => later.client.auth.signOut())
        const fresh = (yield* feed(url, { since: (empty.json as FeedPage).next })).json as FeedPage
        expect(fresh.sessions.map((row) => row.session_id)).toEqual([sessionOf(later.session.access_token)])
      }))

    it.effect("the feed is the service role's only; a `since` or `limit` it cannot read is 400", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { session } = yield* signedUp(url)
        expect((yield* feed(url, {}, {})).status).toBe(401)
        expect((yield* feed(url, {}, { authorization: `Bearer ${session.access_token}` })).status).toBe(403)
        expect((yield* feed(url, {}, { authorization: `Bearer ${anonKey}` })).status).toBe(403)
        for (const query of [
          { since: "yesterday" },
          { since: "2026-13-45T99:99:99Z" },
          { since: Buffer.from("1.not-a-uuid").toString("base64url") },
          { since: Buffer.from("99999999999999999999999.00000000-0000-0000-0000-000000000000").toString("base64url") },
          { limit: "0" },
          { limit: "-1" },
          { limit: "x" }
        ]) {
          const answer = yield* feed(url, query)
          expect({ query, status: answer.status, code: answer.json?.error_code }).toEqual({ query, status: 400, code: "validation_failed" })
        }
        const capped = yield* feed(url, { limit: "999999" })
        expect(capped.status).toBe(200)
      }))

    // PostgreSQL only: on the embedded database an open transaction holds every other connection, the server's too.
    it.effect.skipIf(Option.isNone(externalDatabaseUrl))(
      "a session ended by a transaction still open is never skipped: the cursor waits for it, and the next page lists it",
      () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const sql = yield* SqlClient.SqlClient
          const t = authTables((yield* PlatformConfig).db.namespace)
          const slow = yield* signedUp(url)
          const quick = yield* signedUp(url)
          const before = ((yield* feed(url, { since: new Date().toISOString() })).json as FeedPage).next
          const cursor = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`DELETE FROM ${sql(t.sessions)} WHERE id = ${sessionOf(slow.session.access_token)}`
            // Meanwhile another session ends and commits, after the open transaction took its id.
            yield* call(() => quick.client.auth.signOut())
            const page = (yield* feed(url, { since: before })).json as FeedPage
            expect(page.sessions.map((row) => row.session_id)).not.toContain(sessionOf(slow.session.access_token))
            expect(page.sessions.map((row) => row.session_id)).not.toContain(sessionOf(quick.session.access_token))
            return page.next
          }))
          const after = (yield* feed(url, { since: cursor })).json as FeedPage
          expect(after.sessions.map((row) => row.session_id)).toEqual(
            [sessionOf(slow.session.access_token), sessionOf(quick.session.access_token)]
          )
        })
    )

    // PostgreSQL only: another database of the same server, where a long transaction (a migration, a report) runs.
    it.effect.skipIf(Option.isNone(externalDatabaseUrl))(
      "a transaction left open in another database does not hold the feed back",
      () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const before = ((yield* feed(url, { since: new Date().toISOString() })).json as FeedPage).next
          const elsewhere = new pg.Client({ connectionString: Option.getOrThrow(externalDatabaseUrl) })
          yield* Effect.acquireRelease(call(() => elsewhere.connect()), () => call(() => elsewhere.end()))
          yield* call(() => elsewhere.query("BEGIN"))
          yield* call(() => elsewhere.query("SELECT pg_current_xact_id()"))
          const ended = yield* signedUp(url)
          yield* call(() => ended.client.auth.signOut())
          const page = (yield* feed(url, { since: before })).json as FeedPage
          expect(page.sessions.map((row) => row.session_id)).toContain(sessionOf(ended.session.access_token))
          yield* call(() => elsewhere.query("ROLLBACK"))
        }).pipe(Effect.scoped)
    )

    it.effect("housekeeping keeps a feed row while an access token of its session could be valid, and deletes it after", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client, session } = yield* signedUp(url)
        yield* call(() => client.auth.signOut())
        const sessionId = sessionOf(session.access_token)
        const sql = yield* SqlClient.SqlClient
        const t = authTables((yield* PlatformConfig).db.namespace)
        const kept = () =>
          Effect.map(sql`SELECT 1 FROM ${sql(t.gatehouse_ended_sessions)} WHERE session_id = ${sessionId}`, (rows) => rows.length === 1)
        expect(yield* kept()).toBe(true)
        const config = yield* AuthConfig
        const repo = yield* EndedSessionsRepo
        const task = endedSessionsTask(repo, config.jwt.exp)
        const now = Date.now()
        yield* sweepPass(task, new Date(now + config.jwt.exp * 1000))
        expect(yield* kept()).toBe(true)
        yield* sweepPass(task, new Date(now + config.jwt.exp * 1000 + Duration.toMillis(ENDED_SESSION_MARGIN) + 60_000))
        expect(yield* kept()).toBe(false)
      }).pipe(Effect.provide(EndedSessionsRepo.Default)))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("with the OAuth server off the service role still introspects, OAuth client credentials are 401, and the feed answers", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client, session } = yield* signedUp(url)
        expect((yield* introspect(url, { token: session.access_token })).json).toMatchObject({ active: true, sub: session.user.id })
        const asClient = yield* introspect(url, { token: session.access_token }, { authorization: basic(randomUUID(), "secret") })
        expect(asClient.status).toBe(401)
        expect(asClient.json).toEqual({ error: "invalid_client", error_description: "Client authentication failed" })
        // The rest of the OAuth server stays off.
        expect((yield* raw(url, "/oauth/token", { body: "grant_type=refresh_token", headers: { "content-type": "application/x-www-form-urlencoded" } })).status).toBe(404)
        yield* call(() => client.auth.signOut())
        expect((yield* introspect(url, { token: session.access_token })).json).toEqual({ active: false })
        const page = (yield* feed(url)).json as FeedPage
        expect(page.sessions.map((row) => row.session_id)).toContain(sessionOf(session.access_token))
      }))
  })
})
