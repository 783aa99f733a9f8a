/**
 * The admin console over HTTP (issue 31): off by default (the auth API's 404, as for any unknown path), signed in only
 * with an admin key, a session cookie that holds no key and is refused without its signature, every change a POST
 * with the session's form token, and each action's audit entry the one the admin API writes.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { CONSOLE_COOKIE, CONSOLE_CSP } from "../../../src/auth/admin/console/ConsoleLive.js"
import { adminJwt, mailTo, PASSWORD, raw, settledMail, signHs256, uniqueEmail } from "../acceptance/AcceptanceKit.js"
import { ServerUrl, TestServer, TestServerOver } from "../../support/TestServer.js"

const ENV = { AUTH_ADMIN_CONSOLE_ENABLED: "true" }
const KEY = adminJwt()

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const request = (url: string, init: RequestInit & { readonly cookie?: string } = {}): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const headers = new Headers(init.headers)
    if (init.cookie !== undefined) headers.set("cookie", `${CONSOLE_COOKIE}=${init.cookie}`)
    const response = await fetch(url, { ...init, headers, redirect: "manual" })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString()
})

const cookieOf = (answer: Answer): string | undefined => /gatehouse-admin=([^;]*)/.exec(answer.headers.get("set-cookie") ?? "")?.[1]

/** Signs in with `key`; the session cookie and the form token its pages carry. */
const signIn = (url: string, key = KEY) =>
  Effect.gen(function*() {
    const answer = yield* request(`${url}/_admin/sign-in`, form({ key }))
    expect(answer.status).toBe(303)
    const cookie = cookieOf(answer)!
    const page = yield* request(`${url}/_admin/users`, { cookie })
    expect(page.status).toBe(200)
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!
    return { cookie, csrf }
  })

const newUser = (url: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail("console")
    const made = yield* raw(url, "/admin/users", { bearer: KEY, body: { email, password: PASSWORD, email_confirm: true } })
    expect(made.status).toBe(200)
    return { id: made.json.id as string, email }
  })

const adminUser = (url: string, id: string) => raw(url, `/admin/users/${id}`, { bearer: KEY })

const auditEntries = (url: string) =>
  Effect.map(raw(url, "/admin/audit?per_page=200", { bearer: KEY }), (answer) =>
    answer.json as ReadonlyArray<{ readonly payload: { readonly action: string; readonly actor_username: string; readonly traits?: Record<string, unknown> } }>)

const entriesAbout = (url: string, id: string, action: string) =>
  Effect.map(auditEntries(url), (entries) => entries.filter((entry) => entry.payload.action === action && entry.payload.traits?.["user_id"] === id))

const passwordSignIn = (url: string, email: string) =>
  raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })

layer(TestServer(ENV), { timeout: 120_000 })("the admin console", (it) => {
  it.effect("is off by default: /_admin answers exactly the auth API's 404 for an unknown path", () =>
    Effect.gen(function*() {
      const off = Context.get(yield* Layer.build(Layer.fresh(TestServerOver())), ServerUrl)
      const unknown = yield* request(`${off}/_no_such_page`)
      expect(unknown.status).toBe(404)
      for (const [path, init] of [["/_admin", {}], ["/_admin/users", {}], ["/_admin/console.css", {}], ["/_admin/sign-in", form({ key: KEY })]] as const) {
        const answer = yield* request(`${off}${path}`, init)
        expect({ path, status: answer.status, text: answer.text, code: answer.headers.get("x-sb-error-code") })
          .toEqual({ path, status: 404, text: unknown.text, code: "not_found" })
        expect(answer.headers.get("set-cookie")).toBeNull()
      }
      // What is not served is not described; served, the entry page is, among the pages.
      const spec = (url: string) => Effect.map(request(`${url}/openapi.json`), (answer) => JSON.parse(answer.text))
      expect((yield* spec(off))["paths"]["/_admin"]).toBeUndefined()
      expect((yield* spec(yield* ServerUrl))["paths"]["/_admin"]).toMatchObject({ servers: [{ url: "/" }], get: { tags: ["Pages"], security: [] } })
    }).pipe(Effect.scoped))

  it.effect("serves the sign-in page with a strict CSP, no-store, and its one style sheet", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const page = yield* request(`${url}/_admin`)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP)
      expect(CONSOLE_CSP).toBe("default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
      expect(page.headers.get("cache-control")).toBe("no-store")
      expect(page.text).toContain(`action="/_admin/sign-in"`)
      const style = yield* request(`${url}/_admin/console.css`)
      expect(style.status).toBe(200)
      expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8")
      expect(style.text).toContain("@media")
      // Not under the auth API's second mount.
      expect((yield* request(`${url}/auth/v1/_admin`)).status).toBe(404)
    }))

  it.effect("refuses a wrong key: an anon key, another secret's key, junk, nothing; no cookie is set", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const anon = signHs256({ role: "anon", iat: 1, exp: 4_000_000_000 }, "test-secret-that-is-at-least-32-characters-long")
      const foreign = signHs256({ role: "service_role", iat: 1, exp: 4_000_000_000 }, "some-other-secret-that-is-32-characters-or-more")
      for (const key of [anon, foreign, "not a key", "", `${KEY}x`]) {
        const answer = yield* request(`${url}/_admin/sign-in`, form({ key }))
        expect(answer.status).toBe(401)
        expect(answer.headers.get("set-cookie")).toBeNull()
        expect(answer.text).toContain("was not accepted")
        expect(answer.text).not.toContain(key === "" ? "\u0000" : key)
      }
      // Another site's page cannot sign a browser in either.
      const cross = yield* request(`${url}/_admin/sign-in`, { ...form({ key: KEY }), headers: { ...form({}).headers, "sec-fetch-site": "cross-site" } })
      expect(cross.status).toBe(403)
      expect(cross.headers.get("set-cookie")).toBeNull()
    }))

  it.effect("a right key starts a session: an HttpOnly, SameSite=Strict cookie on /_admin that holds no key", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const answer = yield* request(`${url}/_admin/sign-in`, form({ key: `  ${KEY}\n` }))
      expect(answer.status).toBe(303)
      expect(answer.headers.get("location")).toBe("/_admin/users")
      const set = answer.headers.get("set-cookie")!
      expect(set).toMatch(/HttpOnly/)
      expect(set).toMatch(/SameSite=Strict/)
      expect(set).toMatch(/Path=\/_admin(;|$)/)
      expect(set).not.toMatch(/Secure/)
      expect(Number(/Max-Age=(\d+)/.exec(set)![1])).toBeLessThanOrEqual(3600)
      const cookie = cookieOf(answer)!
      for (const part of KEY.split(".")) expect(cookie).not.toContain(part)
      const page = yield* request(`${url}/_admin/users`, { cookie })
      expect(page.text).not.toContain(KEY)
      expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP)
      // Behind a proxy that terminates https, the cookie is Secure.
      const proxied = yield* request(`${url}/_admin/sign-in`, { ...form({ key: KEY }), headers: { ...form({}).headers, "x-forwarded-proto": "https" } })
      expect(proxied.headers.get("set-cookie")).toMatch(/; Secure/)
      // Signed in, the entry page goes to the users.
      expect((yield* request(`${url}/_admin`, { cookie })).headers.get("location")).toBe("/_admin/users")
    }))

  it.effect("without a session, a page goes to sign-in and a form changes nothing; a cookie without its signature is no session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { id } = yield* newUser(url)
      const { cookie, csrf } = yield* signIn(url)
      const unsigned = cookie.split(".").slice(0, 2).join(".")
      const resigned = `${unsigned}.${"A".repeat(43)}`
      for (const bad of [undefined, unsigned, `${unsigned}.`, resigned, "junk"]) {
        const page = yield* request(`${url}/_admin/users/${id}`, bad === undefined ? {} : { cookie: bad })
        expect(page.status).toBe(303)
        expect(page.headers.get("location")).toBe("/_admin")
        const post = yield* request(`${url}/_admin/users/${id}/ban`, { ...form({ csrf, duration: "24h" }), ...(bad === undefined ? {} : { cookie: bad }) })
        expect(post.status).toBe(403)
      }
      expect((yield* adminUser(url, id)).json.banned_until).toBeUndefined()
    }))

  it.effect("a form without the session's token, or with another session's, is 403 and changes nothing", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { id } = yield* newUser(url)
      const mine = yield* signIn(url)
      const other = yield* signIn(url)
      expect(other.csrf).not.toBe(mine.csrf)
      for (const fields of [{ duration: "24h" }, { duration: "24h", csrf: "" }, { duration: "24h", csrf: other.csrf }, { duration: "24h", csrf: `${mine.csrf}x` }]) {
        const answer = yield* request(`${url}/_admin/users/${id}/ban`, { ...form(fields), cookie: mine.cookie })
        expect(answer.status).toBe(403)
        expect(answer.text).toContain("Nothing was changed")
      }
      // Another site's form is refused even with the right token.
      const cross = yield* request(`${url}/_admin/users/${id}/ban`, {
        ...form({ duration: "24h", csrf: mine.csrf }),
        headers: { ...form({}).headers, "sec-fetch-site": "cross-site" },
        cookie: mine.cookie
      })
      expect(cross.status).toBe(403)
      // A GET never changes anything: the action paths answer only POST.
      const get = yield* request(`${url}/_admin/users/${id}/ban?duration=24h&csrf=${mine.csrf}`, { cookie: mine.cookie })
      expect(get.status).toBe(405)
      expect(get.headers.get("allow")).toBe("POST")
      expect((yield* adminUser(url, id)).json.banned_until).toBeUndefined()
      expect(yield* entriesAbout(url, id, "user_modified")).toEqual([])
    }))

  it.effect("ban and unban as PUT /admin/users/{id} with ban_duration: the same audit entry, and the sessions end", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, id } = yield* newUser(url)
      const signedIn = yield* passwordSignIn(url, email)
      expect(signedIn.status).toBe(200)
      const { cookie, csrf } = yield* signIn(url)
      const shown = yield* request(`${url}/_admin/users/${id}`, { cookie })
      expect(shown.text).toContain(email)
      expect(shown.text).toContain("aal1")
      const bad = yield* request(`${url}/_admin/users/${id}/ban`, { ...form({ csrf, duration: "forever" }), cookie })
      expect(bad.status).toBe(400)
      expect(bad.text).toContain("forever")
      for (const nothing of ["none", "0s", "-1h", ""]) {
        expect((yield* request(`${url}/_admin/users/${id}/ban`, { ...form({ csrf, duration: nothing }), cookie })).status).toBe(400)
      }
      expect(yield* entriesAbout(url, id, "user_modified")).toEqual([])
      const banned = yield* request(`${url}/_admin/users/${id}/ban`, { ...form({ csrf, duration: "24h" }), cookie })
      expect(banned.status).toBe(303)
      expect(banned.headers.get("location")).toBe(`/_admin/users/${id}?done=banned`)
      const after = (yield* adminUser(url, id)).json
      // 24h from the change, on the server's clock (the test's).
      expect(new Date(after.banned_until).getTime() - new Date(after.updated_at).getTime()).toBe(24 * 3600_000)
      const refresh = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: signedIn.json.refresh_token } })
      expect(refresh.status).toBeGreaterThanOrEqual(400)
      const [entry] = yield* entriesAbout(url, id, "user_modified")
      expect(entry?.payload).toMatchObject({ actor_username: "service_role", traits: { user_id: id, user_email: email, banned_until: after.banned_until } })
      const page = yield* request(`${url}/_admin/users/${id}?done=banned`, { cookie })
      expect(page.text).toContain("The user is banned")
      expect(page.text).not.toContain("aal1")
      const lifted = yield* request(`${url}/_admin/users/${id}/unban`, { ...form({ csrf }), cookie })
      expect(lifted.status).toBe(303)
      expect((yield* adminUser(url, id)).json.banned_until).toBeUndefined()
      expect(yield* entriesAbout(url, id, "user_modified")).toHaveLength(2)
    }))

  it.effect("end all sessions, send recovery, delete: each with its audit entry", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, id } = yield* newUser(url)
      const signedIn = yield* passwordSignIn(url, email)
      const { cookie, csrf } = yield* signIn(url)
      const ended = yield* request(`${url}/_admin/users/${id}/end-sessions`, { ...form({ csrf }), cookie })
      expect(ended.headers.get("location")).toBe(`/_admin/users/${id}?done=sessions-ended`)
      const refresh = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: signedIn.json.refresh_token } })
      expect(refresh.status).toBe(400)
      expect((yield* entriesAbout(url, id, "logout"))[0]?.payload).toMatchObject({ actor_username: "service_role", traits: { scope: "admin" } })

      const sent = yield* request(`${url}/_admin/users/${id}/send-recovery`, { ...form({ csrf }), cookie })
      expect(sent.headers.get("location")).toBe(`/_admin/users/${id}?done=recovery-sent`)
      yield* settledMail
      expect((yield* mailTo(email)).length).toBe(1)
      const recovery = (yield* auditEntries(url)).filter((entry) => entry.payload.action === "user_recovery_requested" && entry.payload.actor_username === email)
      expect(recovery).toHaveLength(1)

      const unticked = yield* request(`${url}/_admin/users/${id}/delete`, { ...form({ csrf }), cookie })
      expect(unticked.status).toBe(400)
      expect((yield* adminUser(url, id)).status).toBe(200)
      const deleted = yield* request(`${url}/_admin/users/${id}/delete`, { ...form({ csrf, confirm: "yes" }), cookie })
      expect(deleted.headers.get("location")).toBe("/_admin/users")
      expect((yield* adminUser(url, id)).status).toBe(404)
      expect(yield* entriesAbout(url, id, "user_deleted")).toHaveLength(1)
      expect((yield* request(`${url}/_admin/users/${id}`, { cookie })).status).toBe(404)
    }))

  it.effect("a key bound to a user's session signs in only while that session lasts, as the admin API holds it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, id } = yield* newUser(url)
      const signedIn = yield* passwordSignIn(url, email)
      const claims = JSON.parse(Buffer.from(signedIn.json.access_token.split(".")[1], "base64url").toString("utf8"))
      const bound = adminJwt("service_role", { sub: id, session_id: claims.session_id })
      const { cookie } = yield* signIn(url, bound)
      const plain = yield* signIn(url)
      yield* request(`${url}/_admin/users/${id}/end-sessions`, { ...form({ csrf: plain.csrf }), cookie: plain.cookie })
      const after = yield* request(`${url}/_admin/users`, { cookie })
      expect(after.status).toBe(303)
      expect(after.headers.get("location")).toBe("/_admin")
      expect((yield* request(`${url}/_admin/sign-in`, form({ key: bound }))).status).toBe(401)
      expect((yield* request(`${url}/_admin/users`, { cookie: plain.cookie })).status).toBe(200)
    }))

  it.effect("lists and filters users, pages the audit log, and says IAM is not served here", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const a = yield* newUser(url)
      const b = yield* newUser(url)
      const { cookie, csrf } = yield* signIn(url)
      const filtered = yield* request(`${url}/_admin/users?filter=${encodeURIComponent(a.email)}`, { cookie })
      expect(filtered.text).toContain(a.email)
      expect(filtered.text).not.toContain(b.email)
      yield* request(`${url}/_admin/users/${a.id}/ban`, { ...form({ csrf, duration: "1h" }), cookie })
      const audit = yield* request(`${url}/_admin/audit?field=action&value=user_modified`, { cookie })
      expect(audit.status).toBe(200)
      expect(audit.text).toContain(a.email)
      expect(audit.text).not.toContain(">user_signedup<")
      const iam = yield* request(`${url}/_admin/iam`, { cookie })
      expect(iam.text).toContain("The IAM service is not served by this server")
      for (const path of ["/_admin/nothing", "/_admin/users/x/y/z", "/_admin/users/not-a-uuid", "/_admin/users/%ZZ"]) {
        expect((yield* request(`${url}${path}`, { cookie })).status).toBe(404)
      }
      for (const path of ["/_admin/users?filter=%00", "/_admin/audit?field=author&value=a%00"]) {
        expect((yield* request(`${url}${path}`, { cookie })).status).toBe(400)
      }
      // A page number that is none is the first page; one past the end is an empty page.
      for (const path of ["/_admin/users?page=x", "/_admin/audit?page=99999999999", "/_admin/users?page=999999", "/_admin/audit?field=nope&value=x"]) {
        expect((yield* request(`${url}${path}`, { cookie })).status).toBe(200)
      }
      // Signing out clears the cookie.
      const out = yield* request(`${url}/_admin/sign-out`, { ...form({ csrf }), cookie })
      expect(out.status).toBe(303)
      expect(out.headers.get("set-cookie")).toMatch(/gatehouse-admin=; Max-Age=0/)
    }))
})
