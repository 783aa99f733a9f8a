/**
 * POST /invite through auth-js's admin API (reference §2.18): the invite mail's link confirms the address and signs
 * in, after which the app sets a password; a confirmed address cannot be invited; a mail that never arrived
 * leaves nothing behind; the service role may invite even when JWT_ADMIN_ROLES leaves it out.
 */
import { describe, expect } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { MailOutage, ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  codeIn,
  expectingErrors,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  uniqueEmail,
  versionedError
} from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"

const adminClient = (url: string, token = adminJwt()) => authClient(url, { headers: { Authorization: `Bearer ${token}` } }).client

const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => ({ status: response.status, location: response.headers.get("location") ?? "" }))
  )

const fragmentOf = (location: string) => new URLSearchParams(location.slice(location.indexOf("#") + 1))

describe("POST /invite", () => {
  acceptance({})((it) => {
    it.effect("inviteUserByEmail mails a link that confirms and signs in (type=invite); the app then sets a password", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("invitee")
        const { data, error } = yield* call(() =>
          adminClient(url).admin.inviteUserByEmail(email, { data: { team: "blue" }, redirectTo: `${SITE_URL}/welcome` })
        )
        expect(error).toBeNull()
        expect(data.user).toMatchObject({
          email,
          invited_at: expect.any(String),
          confirmation_sent_at: expect.any(String),
          app_metadata: { provider: "email", providers: ["email"] }
        })
        expect(data.user!.email_confirmed_at).toBeUndefined()
        // The data is the admin's, as given (GoTrue's invite): no claims are merged into it.
        expect(data.user!.user_metadata).toEqual({ team: "blue" })
        expect(data.user!.identities!.map((identity) => identity.provider)).toEqual(["email"])
        // No password yet: nobody can sign in with one.
        const before = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
        expect(before.error).toMatchObject({ code: "invalid_credentials" })

        const mails = yield* mailTo(email)
        expect(mails.map((mail) => mail.subject)).toEqual(["You have been invited"])
        const link = linkIn(mails[0]!)
        expect(`${link.origin}${link.pathname}`).toBe("http://localhost:9999/verify")
        expect(link.searchParams.get("type")).toBe("invite")
        expect(link.searchParams.get("redirect_to")).toBe(`${SITE_URL}/welcome`)

        const followed = yield* follow(url, link)
        expect(followed.status).toBe(303)
        expect(followed.location.startsWith(`${SITE_URL}/welcome#access_token=`)).toBe(true)
        const fragment = fragmentOf(followed.location)
        expect(fragment.get("type")).toBe("invite")

        const { client } = authClient(url)
        const session = yield* call(() =>
          client.setSession({ access_token: fragment.get("access_token")!, refresh_token: fragment.get("refresh_token")! })
        )
        expect(session.error).toBeNull()
        expect(session.data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
        expect(session.data.user?.user_metadata).toEqual({ team: "blue", email_verified: true })
        expect((yield* call(() => client.updateUser({ password: PASSWORD }))).error).toBeNull()
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
        // The link is spent.
        expect(fragmentOf((yield* follow(url, link)).location).get("error_code")).toBe("otp_expired")
      }))

    it.effect("the mailed code works with verifyOtp(invite); an unconfirmed invitee can be invited again, with a new code", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("twice")
        const admin = adminClient(url)
        const first = yield* call(() => admin.admin.inviteUserByEmail(email))
        const second = yield* call(() => admin.admin.inviteUserByEmail(email))
        expect(second.error).toBeNull()
        expect(second.data.user!.id).toBe(first.data.user!.id)
        const [oldMail, newMail] = yield* mailTo(email)
        const { client } = authClient(url)
        const stale = yield* call(() => client.verifyOtp({ email, token: codeIn(oldMail!), type: "invite" }))
        expect(stale.error).toMatchObject({ status: 403, code: "otp_expired" })
        const { data, error } = yield* call(() => client.verifyOtp({ email, token: codeIn(newMail!), type: "invite" }))
        expect(error).toBeNull()
        expect(data.session).not.toBeNull()
        expect(data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
      }))

    it.effect("a confirmed address is 422 email_exists; a bad address 400; nothing is mailed", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("member")
        const admin = adminClient(url)
        yield* call(() => admin.admin.inviteUserByEmail(email))
        const link = linkIn((yield* mailTo(email))[0]!)
        expect((yield* follow(url, link)).status).toBe(303)
        const again = yield* call(() => admin.admin.inviteUserByEmail(email))
        expect(again.error).toMatchObject({ status: 422, code: "email_exists" })
        expect(yield* mailTo(email)).toHaveLength(1)

        const bad = yield* raw(url, "/invite", { body: { email: "not-an-address" }, bearer: adminJwt(), apiVersion: true })
        expect([bad.status, bad.json]).toEqual([400, versionedError("validation_failed", "Unable to validate email address: invalid format")])
        const missing = yield* raw(url, "/invite", { body: {}, bearer: adminJwt(), apiVersion: true })
        expect([missing.status, missing.json?.code]).toEqual([400, "validation_failed"])
      }))

    it.effect("when the mail cannot be sent the invitee is not left behind, and a later invite works", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("outage")
        const admin = adminClient(url)
        const outage = yield* MailOutage
        yield* Ref.set(outage, true)
        const failed = yield* call(() => admin.admin.inviteUserByEmail(email)).pipe(Effect.ensuring(Ref.set(outage, false)))
        expect(failed.error).toMatchObject({ status: 500 })
        const listed = yield* call(() => admin.admin.generateLink({ type: "recovery", email }))
        expect(listed.error).toMatchObject({ status: 404, code: "user_not_found" })
        const retried = yield* call(() => admin.admin.inviteUserByEmail(email))
        expect(retried.error).toBeNull()
        expect(yield* mailTo(email)).toHaveLength(1)
      })))
  })

  acceptance({ AUTH_JWT_ADMIN_ROLES: "supabase_admin", AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("the service role may invite even when JWT_ADMIN_ROLES leaves it out; a user's token may not", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const invited = yield* call(() => adminClient(url, adminJwt("service_role")).admin.inviteUserByEmail(uniqueEmail("svc")))
        expect(invited.error).toBeNull()
        const { client } = authClient(url)
        const signedUp = yield* call(() => client.signUp({ email: uniqueEmail("user"), password: PASSWORD }))
        const asUser = yield* raw(url, "/invite", { body: { email: uniqueEmail("x") }, bearer: signedUp.data.session!.access_token, apiVersion: true })
        expect([asUser.status, asUser.json]).toEqual([403, versionedError("not_admin", "User not allowed")])
      }))
  })
})
