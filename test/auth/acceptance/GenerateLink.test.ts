/**
 * POST /admin/generate_link through auth-js's admin API (reference §2.17): for every type, the returned link or
 * code works in /verify as the mailed one would, and nothing is mailed. Unknown addresses: a magic link signs
 * them up, recovery and email changes are 404.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, mailTo, PASSWORD, raw, uniqueEmail, versionedError } from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"
const ALLOWED = "https://app.example.com/after"

const adminClient = (url: string) => authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}` } }).client

/** GET the action link on the test server (its host is API_EXTERNAL_URL), without following the redirect. */
const follow = (url: string, actionLink: string) =>
  Effect.gen(function*() {
    const link = new URL(actionLink)
    expect(`${link.origin}${link.pathname}`).toBe("http://localhost:9999/verify")
    const response = yield* call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" }))
    const location = response.headers.get("location") ?? ""
    return { status: response.status, location, fragment: new URLSearchParams(location.slice(location.indexOf("#") + 1)) }
  })

/** A user who signed up through generate_link and followed the link: confirmed, with PASSWORD. */
const confirmedUser = (url: string, tag: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail(tag)
    const { data } = yield* call(() => adminClient(url).admin.generateLink({ type: "signup", email, password: PASSWORD }))
    expect((yield* follow(url, data.properties!.action_link)).fragment.get("type")).toBe("signup")
    return email
  })

describe("POST /admin/generate_link", () => {
  acceptance({ AUTH_URI_ALLOW_LIST: "https://app.example.com/**" })((it) => {
    it.effect("signup: a new user with the password; the action link confirms and signs in; nothing is mailed", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("gl-signup")
        const { data, error } = yield* call(() =>
          adminClient(url).admin.generateLink({ type: "signup", email, password: PASSWORD, options: { data: { plan: "pro" }, redirectTo: ALLOWED } })
        )
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email, confirmation_sent_at: expect.any(String) })
        expect(data.user!.email_confirmed_at).toBeUndefined()
        // The admin's data as given: a link made by an admin merges no claims into it (GoTrue's generate_link).
        expect(data.user!.user_metadata).toEqual({ plan: "pro" })
        expect(data.user!.identities?.[0]?.identity_data).toEqual({ sub: data.user!.id, email, email_verified: false, phone_verified: false })
        const properties = data.properties!
        expect(properties).toMatchObject({ verification_type: "signup", redirect_to: ALLOWED, email_otp: expect.stringMatching(/^\d{6}$/) })
        const link = new URL(properties.action_link)
        expect([link.searchParams.get("token"), link.searchParams.get("type"), link.searchParams.get("redirect_to")])
          .toEqual([properties.hashed_token, "signup", ALLOWED])
        const followed = yield* follow(url, properties.action_link)
        expect(followed.status).toBe(303)
        expect(followed.location.startsWith(`${ALLOWED}#access_token=`)).toBe(true)
        expect(followed.fragment.get("type")).toBe("signup")
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
        expect(yield* mailTo(email)).toEqual([])
      }))

    it.effect("invite: the code verifies with verifyOtp(invite) and signs in", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("gl-invite")
        const { data, error } = yield* call(() => adminClient(url).admin.generateLink({ type: "invite", email }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email, invited_at: expect.any(String) })
        expect(data.properties).toMatchObject({ verification_type: "invite", redirect_to: SITE_URL })
        expect(new URL(data.properties!.action_link).searchParams.get("type")).toBe("invite")
        const verified = yield* call(() => authClient(url).client.verifyOtp({ email, token: data.properties!.email_otp, type: "invite" }))
        expect(verified.error).toBeNull()
        expect(verified.data.session).not.toBeNull()
        expect(verified.data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
        expect(yield* mailTo(email)).toEqual([])
      }))

    it.effect("magiclink: a known user signs in with the token_hash; an unknown address is signed up instead", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const known = yield* confirmedUser(url, "gl-magic")
        const { data } = yield* call(() => admin.admin.generateLink({ type: "magiclink", email: known }))
        expect(data.properties).toMatchObject({ verification_type: "magiclink" })
        expect(new URL(data.properties!.action_link).searchParams.get("type")).toBe("magiclink")
        const verified = yield* call(() =>
          authClient(url).client.verifyOtp({ token_hash: data.properties!.hashed_token, type: "magiclink" })
        )
        expect(verified.error).toBeNull()
        expect(verified.data.user?.email).toBe(known)

        const unknown = uniqueEmail("gl-magic-new")
        const created = yield* call(() => admin.admin.generateLink({ type: "magiclink", email: unknown }))
        expect(created.error).toBeNull()
        expect(created.data.user).toMatchObject({ email: unknown, identities: [expect.objectContaining({ provider: "email" })] })
        expect(created.data.properties).toMatchObject({ verification_type: "signup" })
        const followed = yield* follow(url, created.data.properties!.action_link)
        expect(followed.fragment.get("type")).toBe("signup")
        expect(followed.fragment.get("access_token")).toEqual(expect.any(String))
        expect(yield* mailTo(known)).toEqual([])
        expect(yield* mailTo(unknown)).toEqual([])
      }))

    it.effect("recovery: the link signs in, then the password can be changed; an unknown address is 404 user_not_found", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = yield* confirmedUser(url, "gl-recover")
        const { data } = yield* call(() => admin.admin.generateLink({ type: "recovery", email }))
        const followed = yield* follow(url, data.properties!.action_link)
        expect(followed.fragment.get("type")).toBe("recovery")
        const { client } = authClient(url)
        yield* call(() =>
          client.setSession({ access_token: followed.fragment.get("access_token")!, refresh_token: followed.fragment.get("refresh_token")! })
        )
        expect((yield* call(() => client.updateUser({ password: "An0ther-Horse-Battery" }))).error).toBeNull()
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: "An0ther-Horse-Battery" }))).error).toBeNull()
        expect(yield* mailTo(email)).toEqual([])

        const missing = yield* call(() => admin.admin.generateLink({ type: "recovery", email: uniqueEmail("nobody") }))
        expect(missing.error).toMatchObject({ status: 404, code: "user_not_found", message: "User with this email not found" })
        for (const type of ["email_change_current", "email_change_new"] as const) {
          const change = yield* call(() => admin.admin.generateLink({ type, email: uniqueEmail("nobody"), newEmail: uniqueEmail("new") }))
          expect(change.error).toMatchObject({ status: 404, code: "user_not_found" })
        }
      }))

    it.effect("email_change_current and email_change_new: both confirmations move the address; a taken new address is 422", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = yield* confirmedUser(url, "gl-change")
        const newEmail = uniqueEmail("gl-changed")
        const current = yield* call(() => admin.admin.generateLink({ type: "email_change_current", email, newEmail }))
        expect(current.error).toBeNull()
        expect(current.data.user).toMatchObject({ email, new_email: newEmail, email_change_sent_at: expect.any(String) })
        expect(current.data.properties).toMatchObject({ verification_type: "email_change_current" })
        const next = yield* call(() => admin.admin.generateLink({ type: "email_change_new", email, newEmail }))
        expect(next.data.properties).toMatchObject({ verification_type: "email_change_new" })
        expect(new URL(next.data.properties!.action_link).searchParams.get("type")).toBe("email_change")

        const { client } = authClient(url)
        const firstHalf = yield* call(() => client.verifyOtp({ email, token: current.data.properties!.email_otp, type: "email_change" }))
        expect(firstHalf.error).toBeNull()
        expect(firstHalf.data.session).toBeNull()
        const followed = yield* follow(url, next.data.properties!.action_link)
        expect(followed.fragment.get("type")).toBe("email_change")
        const user = yield* call(() => client.getUser(followed.fragment.get("access_token")!))
        expect(user.data.user?.email).toBe(newEmail)
        expect(yield* mailTo(email)).toEqual([])
        expect(yield* mailTo(newEmail)).toEqual([])

        const other = yield* confirmedUser(url, "gl-other")
        const taken = yield* call(() => admin.admin.generateLink({ type: "email_change_new", email: other, newEmail }))
        expect(taken.error).toMatchObject({ status: 422, code: "email_exists" })
      }))

    it.effect("signup or invite of a confirmed user is 422 email_exists; a new sign-up needs a password that passes the policy", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url)
        const email = yield* confirmedUser(url, "gl-exists")
        for (const type of ["signup", "invite"] as const) {
          const refused = yield* call(() => admin.admin.generateLink({ type, email, password: PASSWORD }))
          expect(refused.error, type).toMatchObject({ status: 422, code: "email_exists" })
        }
        const bearer = adminJwt()
        const noPassword = yield* raw(url, "/admin/generate_link", { body: { type: "signup", email: uniqueEmail("np") }, bearer, apiVersion: true })
        expect([noPassword.status, noPassword.json]).toEqual([400, versionedError("validation_failed", "Signup requires a valid password")])
        const weak = yield* raw(url, "/admin/generate_link", { body: { type: "signup", email: uniqueEmail("weak"), password: "123" }, bearer, apiVersion: true })
        expect([weak.status, weak.json?.code]).toEqual([422, "weak_password"])
        const unknownType = yield* raw(url, "/admin/generate_link", { body: { type: "sms", email: uniqueEmail("t") }, bearer, apiVersion: true })
        expect([unknownType.status, unknownType.json]).toEqual([400, versionedError("validation_failed", "Invalid email action link type requested: sms")])
        const badEmail = yield* raw(url, "/admin/generate_link", { body: { type: "invite", email: "nope" }, bearer, apiVersion: true })
        expect([badEmail.status, badEmail.json?.code]).toEqual([400, "validation_failed"])
        const noNewEmail = yield* raw(url, "/admin/generate_link", { body: { type: "email_change_new", email }, bearer, apiVersion: true })
        expect([noNewEmail.status, noNewEmail.json]).toEqual([400, versionedError("validation_failed", "An email address is required")])
      }))

    it.effect("redirect_to: an allowed one (body or query) is kept, any other becomes SITE_URL", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const bearer = adminJwt()
        const cases = [
          [{ redirect_to: ALLOWED }, "", ALLOWED],
          [{}, `?redirect_to=${encodeURIComponent(ALLOWED)}`, ALLOWED],
          [{ redirect_to: "https://evil.example/" }, "", SITE_URL],
          [{ redirect_to: "https://evil.example/" }, `?redirect_to=${encodeURIComponent(ALLOWED)}`, ALLOWED]
        ] as const
        for (const [body, query, expected] of cases) {
          const response = yield* raw(url, `/admin/generate_link${query}`, { body: { type: "invite", email: uniqueEmail("rd"), ...body }, bearer })
          expect(response.status).toBe(200)
          expect(response.json.redirect_to, JSON.stringify(body) + query).toBe(expected)
          expect(new URL(response.json.action_link).searchParams.get("redirect_to")).toBe(expected)
        }
      }))

    it.effect("a user's own access token is 403 not_admin", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser(url, "gl-user")
        const signedIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
        const bearer = signedIn.data.session!.access_token
        const refused = yield* raw(url, "/admin/generate_link", { body: { type: "magiclink", email }, bearer, apiVersion: true })
        expect([refused.status, refused.json]).toEqual([403, versionedError("not_admin", "User not allowed")])
      }))
  })

  acceptance({ AUTH_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false" })((it) => {
    it.effect("without secure email change: email_change_current is 400; email_change_new alone moves the address", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser(url, "gl-insecure")
        const newEmail = uniqueEmail("gl-insecure-new")
        const current = yield* raw(url, "/admin/generate_link", {
          body: { type: "email_change_current", email, new_email: newEmail },
          bearer: adminJwt(),
          apiVersion: true
        })
        expect([current.status, current.json?.code]).toEqual([400, "validation_failed"])
        const { data, error } = yield* call(() => adminClient(url).admin.generateLink({ type: "email_change_new", email, newEmail }))
        expect(error).toBeNull()
        const followed = yield* follow(url, data.properties!.action_link)
        expect([followed.status, followed.fragment.get("type")]).toEqual([303, "email_change"])
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email: newEmail, password: PASSWORD }))).error).toBeNull()
      }))
  })
})
