/**
 * The admin users API (reference §2.16, issue 11) through auth-js's own admin client, as a server-side app calls
 * it with the service_role key: create, list, get, update, delete, and what each does to signing in.
 */
import { describe, expect } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, PASSWORD, raw, uniqueEmail, uniquePhone, versionedError } from "./AcceptanceKit.js"

const adminClient = (url: string) =>
  authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}`, apikey: adminJwt() } }).client

const env = { AUTH_MAILER_AUTOCONFIRM: "false", AUTH_PASSWORD_MIN_LENGTH: "8" }

describe("admin users", () => {
  acceptance(env)((it) => {
    it.effect("createUser with email, password and email_confirm: the user can sign in at once; a duplicate is email_exists", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = uniqueEmail("admin-create")
        const created = yield* call(() =>
          admin.admin.createUser({ email, password: PASSWORD, email_confirm: true, user_metadata: { full_name: "Ada" }, app_metadata: { plan: "pro" } }))
        expect(created.error).toBeNull()
        const user = created.data.user!
        expect(user).toMatchObject({
          email,
          aud: "authenticated",
          role: "authenticated",
          app_metadata: { provider: "email", providers: ["email"], plan: "pro" }
        })
        // The metadata is the admin's, as given; confirming adds only its mark (GoTrue's Confirm). The claims are
        // the identity's alone.
        expect(user.user_metadata).toEqual({ full_name: "Ada", email_verified: true })
        expect(user.identities?.[0]?.identity_data).toEqual({ sub: user.id, email, email_verified: false, phone_verified: false })
        expect(user.email_confirmed_at).toEqual(expect.any(String))
        expect(user.identities?.map((i) => i.provider)).toEqual(["email"])

        const { client } = authClient(url)
        const signedIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect(signedIn.error).toBeNull()
        expect(signedIn.data.user?.id).toBe(user.id)

        const again = yield* call(() => admin.admin.createUser({ email: email.toUpperCase(), password: PASSWORD }))
        expect([again.error?.status, again.error?.code]).toEqual([422, "email_exists"])
      }))

    it.effect("createUser with a phone, with a chosen id, with both addresses; no address is a 400; the policy holds", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const id = randomUUID()
        const phone = uniquePhone()
        const byPhone = yield* call(() => admin.admin.createUser({ id, phone, phone_confirm: true } as any))
        expect(byPhone.error).toBeNull()
        expect(byPhone.data.user).toMatchObject({ id, phone: phone.slice(1), app_metadata: { provider: "phone", providers: ["phone"] } })
        expect(byPhone.data.user?.phone_confirmed_at).toEqual(expect.any(String))
        const taken = yield* call(() => admin.admin.createUser({ phone }))
        expect([taken.error?.status, taken.error?.code]).toEqual([422, "phone_exists"])

        const email = uniqueEmail("admin-both")
        const both = yield* call(() => admin.admin.createUser({ email, phone: uniquePhone(), password: PASSWORD }))
        expect(both.data.user?.app_metadata).toMatchObject({ provider: "email", providers: ["email", "phone"] })
        expect(both.data.user?.identities?.map((i) => i.provider).sort()).toEqual(["email", "phone"])

        // POST /admin/users/{id} creates that user.
        const pathId = randomUUID()
        const viaPath = yield* raw(url, `/admin/users/${pathId}`, { bearer: adminJwt(), body: { email: uniqueEmail("admin-path") } })
        expect([viaPath.status, viaPath.json?.id]).toEqual([200, pathId])

        const none = yield* call(() => admin.admin.createUser({ password: PASSWORD }))
        expect([none.error?.status, none.error?.code]).toEqual([400, "validation_failed"])
        const weak = yield* call(() => admin.admin.createUser({ email: uniqueEmail("admin-weak"), password: "short" }))
        expect([weak.error?.status, weak.error?.code]).toEqual([422, "weak_password"])
        for (const bad of ["not-a-uuid", "00000000-0000-0000-0000-000000000000"]) {
          const refused = yield* raw(url, "/admin/users", { bearer: adminJwt(), apiVersion: true, body: { id: bad, email: uniqueEmail("admin-id") } })
          expect([refused.status, refused.json?.code]).toEqual([400, "validation_failed"])
        }
      }))

    it.effect("an imported bcrypt password_hash signs in; another hash format is refused", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        // bcrypt("password123"), cost 4.
        const hash = "$2b$04$WRsM9Yk0Ojyt8FJvIpCB5O8CqKhylh5cngB2KL/GI3XoL.D.bcnMG"
        const email = uniqueEmail("admin-hash")
        const created = yield* raw(url, "/admin/users", { bearer: adminJwt(), body: { email, email_confirm: true, password_hash: hash } })
        expect(created.status).toBe(200)
        const { client } = authClient(url)
        const signedIn = yield* call(() => client.signInWithPassword({ email, password: "password123" }))
        expect(signedIn.error).toBeNull()
        const argon = yield* raw(url, "/admin/users", { bearer: adminJwt(), apiVersion: true, body: { email: uniqueEmail("admin-argon"), password_hash: "$argon2id$v=19$m=16,t=2,p=1$abc$def" } })
        expect([argon.status, argon.json?.code]).toEqual([400, "validation_failed"])
      }))

    it.effect("getUserById finds the user; a malformed id is 404 validation_failed; an unknown one 404 user_not_found", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const created = yield* call(() => admin.admin.createUser({ email: uniqueEmail("admin-get") }))
        const found = yield* call(() => admin.admin.getUserById(created.data.user!.id))
        expect(found.data.user?.email).toBe(created.data.user!.email)
        const unknown = yield* call(() => admin.admin.getUserById(randomUUID()))
        expect([unknown.error?.status, unknown.error?.code, unknown.error?.message]).toEqual([404, "user_not_found", "User not found"])
        for (const method of ["GET", "PUT", "DELETE"]) {
          const malformed = yield* raw(url, "/admin/users/not-a-uuid", { method, bearer: adminJwt(), apiVersion: true, ...(method === "PUT" ? { body: {} } : {}) })
          expect([malformed.status, malformed.json]).toEqual([404, versionedError("validation_failed", "user_id must be an UUID")])
        }
      }))

    it.effect("updateUserById: a new password ends every session; metadata merges and null deletes; role and email are set", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = uniqueEmail("admin-update")
        const created = yield* call(() =>
          admin.admin.createUser({ email, password: PASSWORD, email_confirm: true, user_metadata: { a: 1, b: 2 }, app_metadata: { tier: "x" } }))
        const id = created.data.user!.id
        const { client } = authClient(url)
        const session = (yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).data.session!

        const weak = yield* call(() => admin.admin.updateUserById(id, { password: "short" }))
        expect([weak.error?.status, weak.error?.code]).toEqual([422, "weak_password"])

        const updated = yield* call(() =>
          admin.admin.updateUserById(id, { password: "An0ther-Good-One", user_metadata: { b: null, c: 3 }, app_metadata: { tier: null, plan: "pro" }, role: "editor" }))
        expect(updated.error).toBeNull()
        expect(updated.data.user?.role).toBe("editor")
        expect(updated.data.user?.user_metadata).toMatchObject({ a: 1, c: 3 })
        expect(updated.data.user?.user_metadata).not.toHaveProperty("b")
        expect(updated.data.user?.app_metadata).toMatchObject({ provider: "email", plan: "pro" })
        expect(updated.data.user?.app_metadata).not.toHaveProperty("tier")

        const refreshed = yield* call(() => client.refreshSession({ refresh_token: session.refresh_token }))
        expect(refreshed.error?.code).toBe("refresh_token_not_found")
        const oldPassword = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect(oldPassword.error?.code).toBe("invalid_credentials")
        const newPassword = yield* call(() => client.signInWithPassword({ email, password: "An0ther-Good-One" }))
        expect(newPassword.error).toBeNull()

        // Email set directly, identity updated; the old address no longer signs in.
        const moved = uniqueEmail("admin-moved")
        const changed = yield* call(() => admin.admin.updateUserById(id, { email: moved }))
        expect(changed.data.user?.email).toBe(moved)
        expect(changed.data.user?.identities?.find((i) => i.provider === "email")?.identity_data?.["email"]).toBe(moved)
        const viaNew = yield* call(() => client.signInWithPassword({ email: moved, password: "An0ther-Good-One" }))
        expect(viaNew.error).toBeNull()

        // A phone added by an admin gets its identity and joins the providers.
        const withPhone = yield* call(() => admin.admin.updateUserById(id, { phone: uniquePhone(), phone_confirm: true }))
        expect(withPhone.data.user?.app_metadata?.["providers"]).toEqual(["email", "phone"])
        expect(withPhone.data.user?.identities?.map((i) => i.provider).sort()).toEqual(["email", "phone"])

        // email_confirm on an unconfirmed user confirms it (and says so in user_metadata): it can sign in.
        const pending = uniqueEmail("admin-pending")
        const pendingId = (yield* call(() => admin.admin.createUser({ email: pending, password: PASSWORD }))).data.user!.id
        const unconfirmed = yield* call(() => client.signInWithPassword({ email: pending, password: PASSWORD }))
        expect(unconfirmed.error?.code).toBe("email_not_confirmed")
        const confirmed = yield* call(() => admin.admin.updateUserById(pendingId, { email_confirm: true }))
        expect(confirmed.data.user?.email_confirmed_at).toEqual(expect.any(String))
        expect(confirmed.data.user?.user_metadata?.["email_verified"]).toBe(true)
        expect((yield* call(() => client.signInWithPassword({ email: pending, password: PASSWORD }))).error).toBeNull()

        const roleNotString = yield* raw(url, `/admin/users/${id}`, { method: "PUT", bearer: adminJwt(), apiVersion: true, body: { role: 7 } })
        expect([roleNotString.status, roleNotString.json?.code]).toEqual([400, "validation_failed"])
      }))

    it.effect("a ban refuses sign-in with user_banned and ends existing sessions; ban_duration none lifts it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = uniqueEmail("admin-ban")
        const id = (yield* call(() => admin.admin.createUser({ email, password: PASSWORD, email_confirm: true }))).data.user!.id
        const { client } = authClient(url)
        const session = (yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).data.session!

        const banned = yield* call(() => admin.admin.updateUserById(id, { ban_duration: "1h30m" }))
        expect(banned.error).toBeNull()
        const until = Date.parse(banned.data.user!.banned_until!)
        expect(until - Date.now()).toBeGreaterThan(89 * 60_000)
        expect(until - Date.now()).toBeLessThanOrEqual(90 * 60_000)

        const refused = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect([refused.error?.status, refused.error?.code]).toEqual([400, "user_banned"])
        const refreshed = yield* call(() => client.refreshSession({ refresh_token: session.refresh_token }))
        expect(refreshed.error?.code).toBe("refresh_token_not_found")
        const asUser = yield* raw(url, "/user", { bearer: session.access_token, apiVersion: true })
        expect(asUser.status).toBe(403)

        const invalid = yield* raw(url, `/admin/users/${id}`, { method: "PUT", bearer: adminJwt(), apiVersion: true, body: { ban_duration: "forever" } })
        expect([invalid.status, invalid.json?.code]).toEqual([400, "validation_failed"])

        const lifted = yield* call(() => admin.admin.updateUserById(id, { ban_duration: "none" }))
        expect(lifted.data.user?.banned_until).toBeUndefined()
        const back = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect(back.error).toBeNull()
      }))

    it.effect("deleteUser: hard delete ends everything and frees the email for a new sign-up", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = uniqueEmail("admin-delete")
        const id = (yield* call(() => admin.admin.createUser({ email, password: PASSWORD, email_confirm: true }))).data.user!.id
        const { client } = authClient(url)
        const session = (yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).data.session!

        const deleted = yield* raw(url, `/admin/users/${id}`, { method: "DELETE", bearer: adminJwt(), body: { should_soft_delete: false } })
        expect([deleted.status, deleted.json]).toEqual([200, {}])
        const gone = yield* call(() => admin.admin.getUserById(id))
        expect([gone.error?.status, gone.error?.code]).toEqual([404, "user_not_found"])
        const factors = yield* call(() => admin.admin.mfa.listFactors({ userId: id }))
        expect([factors.error?.status, factors.error?.code]).toEqual([404, "user_not_found"])
        const signIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect(signIn.error?.code).toBe("invalid_credentials")
        const refreshed = yield* call(() => client.refreshSession({ refresh_token: session.refresh_token }))
        expect(refreshed.error?.status).toBe(400)
        const again = yield* call(() => admin.admin.deleteUser(id))
        expect([again.error?.status, again.error?.code]).toEqual([404, "user_not_found"])

        const signedUp = yield* call(() => client.signUp({ email, password: PASSWORD }))
        expect(signedUp.error).toBeNull()
        expect(signedUp.data.user?.id).not.toBe(id)

        // A DELETE without a body is a hard delete too.
        const other = (yield* call(() => admin.admin.createUser({ email: uniqueEmail("admin-nobody") }))).data.user!.id
        const bare = yield* raw(url, `/admin/users/${other}`, { method: "DELETE", bearer: adminJwt() })
        expect([bare.status, bare.json]).toEqual([200, {}])
      }))

    it.effect("deleteUser soft: the row stays with its addresses obfuscated; sign-in fails and the address is free again", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = uniqueEmail("admin-soft")
        const phone = uniquePhone()
        const id = (yield* call(() =>
          admin.admin.createUser({ email, phone, password: PASSWORD, email_confirm: true, user_metadata: { full_name: "Gone" } }))).data.user!.id
        const { client } = authClient(url)
        const session = (yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).data.session!

        const deleted = yield* call(() => admin.admin.deleteUser(id, true))
        expect(deleted.error).toBeNull()
        const kept = yield* call(() => admin.admin.getUserById(id))
        expect(kept.data.user?.email).not.toBe(email)
        expect(kept.data.user?.email).not.toBe("")
        expect(kept.data.user?.phone).not.toBe(phone.slice(1))
        expect(kept.data.user?.user_metadata).toEqual({})
        const signIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        expect(signIn.error?.code).toBe("invalid_credentials")
        const refreshed = yield* call(() => client.refreshSession({ refresh_token: session.refresh_token }))
        expect(refreshed.error?.status).toBe(400)
        const asUser = yield* raw(url, "/user", { bearer: session.access_token })
        expect(asUser.status).toBe(403)

        const reused = yield* call(() => admin.admin.createUser({ email, phone }))
        expect(reused.error).toBeNull()
      }))

    it.effect("a user's own token is refused with not_admin on every users route", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const email = uniqueEmail("admin-nonadmin")
        yield* call(() => adminClient(url).admin.createUser({ email, password: PASSWORD, email_confirm: true }))
        const token = (yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).data.session!.access_token
        for (const [method, path] of [["GET", "/admin/users"], ["POST", "/admin/users"], ["GET", `/admin/users/${randomUUID()}`], ["PUT", `/admin/users/${randomUUID()}`], ["DELETE", `/admin/users/${randomUUID()}`]] as const) {
          const refused = yield* raw(url, path, { method, bearer: token, apiVersion: true, ...(method === "POST" || method === "PUT" ? { body: { email } } : {}) })
          expect([method, path, refused.status, refused.json]).toEqual([method, path, 403, versionedError("not_admin", "User not allowed")])
        }
      }))
  })
})

describe("admin users: listing", () => {
  acceptance(env)((it) => {
    it.effect("listUsers pages newest first with X-Total-Count and Link; filter matches email, phone and full_name in any case", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const emails: Array<string> = []
        for (const n of [1, 2, 3, 4, 5]) {
          const email = `list-${n}-${randomUUID().slice(0, 6)}@example.com`
          emails.push(email)
          yield* call(() => admin.admin.createUser({ email, user_metadata: n === 5 ? { full_name: "Grace HOPPER" } : {} }))
        }
        const phone = uniquePhone()
        yield* call(() => admin.admin.createUser({ phone }))

        const first = yield* call(() => admin.admin.listUsers({ page: 1, perPage: 2 }))
        expect(first.error).toBeNull()
        expect(first.data).toMatchObject({ total: 6, nextPage: 2, lastPage: 3, aud: "authenticated" })
        expect(first.data.users.map((u) => u.phone)).toContain(phone.slice(1))
        const second = yield* call(() => admin.admin.listUsers({ page: 2, perPage: 2 }))
        expect(second.data.users.map((u) => u.email)).toEqual([emails[3], emails[2]])
        const last = yield* call(() => admin.admin.listUsers({ page: 3, perPage: 2 }))
        expect(last.data).toMatchObject({ nextPage: null, lastPage: 3 })
        expect(last.data.users.map((u) => u.email)).toEqual([emails[1], emails[0]])
        const all = yield* call(() => admin.admin.listUsers())
        expect(all.data.users).toHaveLength(6)

        const headers = yield* raw(url, "/auth/v1/admin/users?per_page=2&filter=LIST-&page=1", { bearer: adminJwt() })
        expect(headers.headers.get("x-total-count")).toBe("5")
        expect(headers.headers.get("link")).toBe(
          "</auth/v1/admin/users?page=2&per_page=2&filter=LIST->; rel=\"next\", </auth/v1/admin/users?page=3&per_page=2&filter=LIST->; rel=\"last\""
        )
        const byName = yield* raw(url, "/admin/users?filter=grace%20hop", { bearer: adminJwt() })
        expect(byName.json.users.map((u: any) => u.email)).toEqual([emails[4]])
        const byPhone = yield* raw(url, `/admin/users?filter=${phone.slice(4)}`, { bearer: adminJwt() })
        expect(byPhone.json.users.map((u: any) => u.phone)).toEqual([phone.slice(1)])
        const literal = yield* raw(url, "/admin/users?filter=%25", { bearer: adminJwt() })
        expect(literal.json.users).toEqual([])

        // X-JWT-AUD picks another audience, as in GoTrue: users created there are listed there only.
        const other = yield* raw(url, "/admin/users", { bearer: adminJwt(), headers: { "x-jwt-aud": "tenant-b" }, body: { email: uniqueEmail("aud-b") } })
        expect([other.status, other.json?.aud]).toEqual([200, "tenant-b"])
        const inB = yield* raw(url, "/admin/users", { bearer: adminJwt(), headers: { "x-jwt-aud": "tenant-b" } })
        expect([inB.json.aud, inB.json.users.map((u: any) => u.id)]).toEqual(["tenant-b", [other.json.id]])
        expect((yield* call(() => admin.admin.listUsers())).data.users).toHaveLength(6)

        for (const query of ["per_page=0", "page=x", "per_page=-1", "per_page=1.5"]) {
          const bad = yield* raw(url, `/admin/users?${query}`, { bearer: adminJwt(), apiVersion: true })
          expect([query, bad.status, bad.json?.code]).toEqual([query, 400, "validation_failed"])
        }
      }))
  })
})
