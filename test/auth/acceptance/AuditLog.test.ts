/**
 * Issue 11: the audit log. An app's everyday calls through auth-js leave GoTrue's entries, and an admin pages
 * through them with GET /admin/audit: newest first, `Link` and `X-Total-Count`, `query=<field>:<value>`.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { baseTestEnv, ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, codeIn, mailTo, PASSWORD, raw, uniqueEmail, versionedError } from "./AcceptanceKit.js"

const NEW_PASSWORD = "N3w-Staple-Battery-Horse"

const audit = (query: string, bearer = adminJwt()) =>
  Effect.flatMap(ServerUrl, (url) => raw(url, `/admin/audit${query}`, { apiVersion: true, bearer }))

/** Signs a new user up, in, refreshes, updates and signs out; answers the user and every secret the client saw. */
const everydayLife = (headers: Record<string, string> = {}) => Effect.gen(function*() {
  const url = yield* ServerUrl
  const { client } = authClient(url, { headers })
  const email = uniqueEmail("audit")
  const signedUp = yield* call(() => client.signUp({ email, password: PASSWORD }))
  expect(signedUp.error).toBeNull()
  const signedIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
  expect(signedIn.error).toBeNull()
  const refreshed = yield* call(() => client.refreshSession())
  expect(refreshed.error).toBeNull()
  const updated = yield* call(() => client.updateUser({ password: NEW_PASSWORD, data: { nickname: "ada" } }))
  expect(updated.error).toBeNull()
  const out = yield* call(() => client.signOut())
  expect(out.error).toBeNull()
  const sessions = [signedUp.data.session!, signedIn.data.session!, refreshed.data.session!]
  const secrets = [
    PASSWORD,
    NEW_PASSWORD,
    baseTestEnv["AUTH_JWT_SECRET"]!,
    ...sessions.flatMap((session) => [session.access_token, session.refresh_token])
  ]
  return { id: signedUp.data.user!.id, email, secrets }
})

describe("the audit log", () => {
  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("records sign-up, sign-in, refresh, update and logout, and GET /admin/audit lists them newest first", () =>
      Effect.gen(function*() {
        const { email, id, secrets } = yield* everydayLife()
        const listed = yield* audit(`?query=author:${encodeURIComponent(email)}`)
        expect(listed.status).toBe(200)
        expect(listed.json.map((entry: any) => entry.payload.action)).toEqual([
          "logout",
          "user_modified",
          "user_updated_password",
          "token_refreshed",
          "token_revoked",
          "login",
          "login",
          "user_signedup"
        ])
        for (const entry of listed.json) {
          expect(Object.keys(entry).sort()).toEqual(["created_at", "id", "ip_address", "payload"])
          expect(entry.payload).toMatchObject({ actor_id: id, actor_username: email, actor_via_sso: false })
        }
        expect(listed.json.map((entry: any) => entry.payload.log_type)).toEqual(["account", "user", "user", "token", "token", "account", "account", "team"])
        expect(listed.json[5].payload.traits).toEqual({ provider: "email" })
        // Without RATE_LIMIT_HEADER the client is the connection's peer, as the rate limits take it.
        expect(listed.json.map((entry: any) => entry.ip_address)).toEqual(Array(8).fill("127.0.0.1"))
        const times = listed.json.map((entry: any) => Date.parse(entry.created_at))
        expect([...times].sort((a, b) => b - a)).toEqual(times)
        expect(listed.headers.get("x-total-count")).toBe("8")
        expect(listed.headers.get("link")).toBe(`</admin/audit?page=1&per_page=50&query=author%3A${encodeURIComponent(email)}>; rel="last"`)
        // No password, token or secret is ever written to the log.
        for (const secret of secrets) expect(listed.text).not.toContain(secret)
      }))

    it.effect("pages with per_page: Link next and last, page first in each URL, and X-Total-Count", () =>
      Effect.gen(function*() {
        const { email } = yield* everydayLife()
        const query = `query=author:${encodeURIComponent(email)}`
        const first = yield* audit(`?per_page=2&${query}`)
        expect(first.json.map((entry: any) => entry.payload.action)).toEqual(["logout", "user_modified"])
        expect(first.headers.get("x-total-count")).toBe("8")
        const encoded = `query=author%3A${encodeURIComponent(email)}`
        expect(first.headers.get("link")).toBe(
          `</admin/audit?page=2&per_page=2&${encoded}>; rel="next", </admin/audit?page=4&per_page=2&${encoded}>; rel="last"`
        )
        const second = yield* audit(`?page=2&per_page=2&${query}`)
        expect(second.json.map((entry: any) => entry.payload.action)).toEqual(["user_updated_password", "token_refreshed"])
        const last = yield* audit(`?page=4&per_page=2&${query}`)
        expect(last.json.map((entry: any) => entry.payload.action)).toEqual(["login", "user_signedup"])
        expect(last.headers.get("link")).toBe(`</admin/audit?page=4&per_page=2&${encoded}>; rel="last"`)
        const beyond = yield* audit(`?page=9&per_page=2&${query}`)
        expect([beyond.status, beyond.json, beyond.headers.get("x-total-count")]).toEqual([200, [], "8"])
      }))

    it.effect("query filters by action and by type; under /auth/v1 too", () =>
      Effect.gen(function*() {
        const { id } = yield* everydayLife()
        const mine = (entries: ReadonlyArray<any>) => entries.filter((entry) => entry.payload.actor_id === id)
        const logins = yield* audit("?query=action:login&per_page=1000")
        expect(mine(logins.json).map((entry: any) => entry.payload.action)).toEqual(["login", "login"])
        expect(logins.json.every((entry: any) => entry.payload.action.includes("login"))).toBe(true)
        const tokens = yield* audit("?query=type:token&per_page=1000")
        expect(mine(tokens.json).map((entry: any) => entry.payload.action)).toEqual(["token_refreshed", "token_revoked"])
        const url = yield* ServerUrl
        const prefixed = yield* raw(url, "/auth/v1/admin/audit?query=action:logout&per_page=1000", { bearer: adminJwt() })
        expect(prefixed.status).toBe(200)
        expect(mine(prefixed.json).map((entry: any) => entry.payload.action)).toEqual(["logout"])
      }))

    it.effect("a user's own token is 403 not_admin; bad paging or query is 400 validation_failed", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const { data } = yield* call(() => client.signUp({ email: uniqueEmail("audit-user"), password: PASSWORD }))
        const asUser = yield* audit("", data.session!.access_token)
        expect([asUser.status, asUser.json]).toEqual([403, versionedError("not_admin", "User not allowed")])
        const none = yield* Effect.flatMap(ServerUrl, (base) => raw(base, "/admin/audit", { apiVersion: true }))
        expect([none.status, none.json?.code]).toEqual([401, "no_authorization"])
        for (const query of ["?page=abc", "?page=-1", "?per_page=0", "?per_page=1.5", "?query=actor", "?query=password:x", "?page=1&page=2"]) {
          const refused = yield* audit(query)
          expect([refused.status, refused.json?.code], query).toEqual([400, "validation_failed"])
        }
        const empty = yield* audit("?query=action:")
        expect(empty.status).toBe(200)
      }))

    it.effect("admin actions are recorded with the admin's role as actor: create, update and ban, invite, delete", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}` } }).client.admin
        const email = uniqueEmail("audit-admin")
        const created = yield* call(() => admin.createUser({ email, password: PASSWORD, email_confirm: true }))
        const id = created.data.user!.id
        yield* call(() => admin.updateUserById(id, { ban_duration: "1h" }))
        const invitee = uniqueEmail("audit-invitee")
        expect((yield* call(() => admin.inviteUserByEmail(invitee))).error).toBeNull()
        expect((yield* call(() => admin.deleteUser(id, true))).error).toBeNull()
        const listed = yield* audit(`?query=author:service_role&per_page=4`)
        expect(listed.json.map((entry: any) => [entry.payload.action, entry.payload.traits.user_email])).toEqual([
          ["user_deleted", email],
          ["user_invited", invitee],
          ["user_modified", email],
          ["user_signedup", email]
        ])
        for (const entry of listed.json) expect(entry.payload).toMatchObject({ actor_username: "service_role", actor_id: "00000000-0000-0000-0000-000000000000" })
        expect(listed.json[0].payload.traits).toMatchObject({ user_id: id, soft_delete: true })
        expect(Date.parse(listed.json[2].payload.traits.banned_until)).toBeGreaterThan(Date.now())
        expect(listed.text).not.toContain(PASSWORD)
      }))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_RATE_LIMIT_HEADER: "X-Real-IP" })((it) => {
    it.effect("with RATE_LIMIT_HEADER, ip_address is the header's first value, as the rate limits count the client", () =>
      Effect.gen(function*() {
        const { email } = yield* everydayLife({ "X-Real-IP": "203.0.113.45, 10.0.0.2" })
        const listed = yield* audit(`?query=author:${encodeURIComponent(email)}`)
        expect(listed.json.map((entry: any) => [entry.payload.action, entry.ip_address])).toEqual([
          ["logout", "203.0.113.45"],
          ["user_modified", "203.0.113.45"],
          ["user_updated_password", "203.0.113.45"],
          ["token_refreshed", "203.0.113.45"],
          ["token_revoked", "203.0.113.45"],
          ["login", "203.0.113.45"],
          ["login", "203.0.113.45"],
          ["user_signedup", "203.0.113.45"]
        ])
        // An admin's request is recorded with its own client's address.
        const url = yield* ServerUrl
        const admin = authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}`, "X-Real-IP": "2001:db8::7" } }).client.admin
        const created = yield* call(() => admin.createUser({ email: uniqueEmail("audit-ip-admin"), password: PASSWORD, email_confirm: true }))
        const byAdmin = yield* audit(`?query=author:service_role&per_page=1`)
        expect(byAdmin.json.map((entry: any) => [entry.payload.traits.user_id, entry.ip_address])).toEqual([[created.data.user!.id, "2001:db8::7"]])
      }))
  })

  acceptance({})((it) => {
    it.effect("with confirmation on: confirmation requested, signed up on verify, recovery and reauthentication requested", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const email = uniqueEmail("audit-confirm")
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        const [mail] = yield* mailTo(email)
        const verified = yield* call(() => client.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))
        expect(verified.error).toBeNull()
        expect((yield* call(() => client.resetPasswordForEmail(email))).error).toBeNull()
        // Signing up again with a confirmed address answers a look-alike user, and the log says what happened.
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).data.user?.identities).toEqual([])
        const reauth = yield* raw(url, "/reauthenticate", { bearer: verified.data.session!.access_token })
        expect(reauth.status).toBe(200)
        const listed = yield* audit(`?query=author:${encodeURIComponent(email)}`)
        expect(listed.json.map((entry: any) => [entry.payload.action, entry.payload.traits])).toEqual([
          ["user_reauthenticate_requested", undefined],
          ["user_repeated_signup", { provider: "email" }],
          ["user_recovery_requested", undefined],
          ["user_signedup", { provider: "email" }],
          ["user_confirmation_requested", { provider: "email" }]
        ])
        expect(listed.text).not.toContain(PASSWORD)
        expect(listed.text).not.toContain(codeIn(mail!))
      }))
  })
})
