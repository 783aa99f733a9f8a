/**
 * Issue 10's promise, kept through `@supabase/supabase-js` exactly as an app uses it: `createClient(url, anonKey)`
 * with confirmation on (GoTrue's default), and the mail read where a user would read it. Sign-up and its link,
 * a magic link, a passwordless sign-up by code, a password reset and a double-confirmed email change.
 */
import { describe, expect } from "@effect/vitest"
import type { SupabaseClient } from "@supabase/supabase-js"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, call, codeIn, linkIn, mailTo, PASSWORD, uniqueEmail } from "./AcceptanceKit.js"
import { projectClient } from "../../support/SupabaseJs.js"

const NEW_PASSWORD = "An0ther-Correct-Horse"


const supabaseClient = projectClient("anon")

/** What a browser does with a mailed link: GET it, and hand the session in the redirect's fragment to the client. */
const followLink = (supabase: SupabaseClient, link: URL) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    // The link names API_EXTERNAL_URL; the test server listens elsewhere, at the same path.
    const response = yield* call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" }))
    expect(response.status).toBe(303)
    const location = response.headers.get("location") ?? ""
    const fragment = new URLSearchParams(location.slice(location.indexOf("#") + 1))
    const access_token = fragment.get("access_token")
    const refresh_token = fragment.get("refresh_token")
    expect(access_token).not.toBeNull()
    const set = yield* call(() => supabase.auth.setSession({ access_token: access_token!, refresh_token: refresh_token! }))
    expect(set.error).toBeNull()
    return fragment.get("type")
  })

const lastMailTo = (address: string) =>
  Effect.map(mailTo(address), (mails) => {
    expect(mails.length).toBeGreaterThan(0)
    return mails[mails.length - 1]!
  })

/** A user who signed up with supabase-js and confirmed by following the mailed link. */
const confirmedUser = (tag: string) =>
  Effect.gen(function*() {
    const supabase = yield* supabaseClient
    const email = uniqueEmail(tag)
    const signUp = yield* call(() => supabase.auth.signUp({ email, password: PASSWORD }))
    expect(signUp.error).toBeNull()
    // Confirmation is on: no session until the address is confirmed.
    expect(signUp.data.session).toBeNull()
    expect(yield* followLink(supabase, linkIn(yield* lastMailTo(email)))).toBe("signup")
    return { supabase, email }
  })

describe("supabase-js createClient(url, anonKey), confirmation on", () => {
  acceptance({})((it) => {
    it.effect("sign-up, then the mailed link: a confirmed, signed-in user", () =>
      Effect.gen(function*() {
        const { email, supabase } = yield* confirmedUser("sjs-signup")
        const { data, error } = yield* call(() => supabase.auth.getUser())
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
      }))

    it.effect("signInWithOtp: a magic link's code signs a known user in; a new address signs up by code", () =>
      Effect.gen(function*() {
        const { email } = yield* confirmedUser("sjs-magic")
        const app = yield* supabaseClient
        expect((yield* call(() => app.auth.signInWithOtp({ email }))).error).toBeNull()
        const code = codeIn(yield* lastMailTo(email))
        const signedIn = yield* call(() => app.auth.verifyOtp({ email, token: code, type: "email" }))
        expect(signedIn.error).toBeNull()
        expect(signedIn.data.user?.email).toBe(email)

        const newcomer = uniqueEmail("sjs-otp-new")
        const other = yield* supabaseClient
        expect((yield* call(() => other.auth.signInWithOtp({ email: newcomer }))).error).toBeNull()
        const newcomerCode = codeIn(yield* lastMailTo(newcomer))
        const created = yield* call(() => other.auth.verifyOtp({ email: newcomer, token: newcomerCode, type: "email" }))
        expect(created.error).toBeNull()
        expect(created.data.user).toMatchObject({ email: newcomer, email_confirmed_at: expect.any(String) })
      }))

    it.effect("resetPasswordForEmail: the link signs in as recovery, updateUser sets the password, which then signs in", () =>
      Effect.gen(function*() {
        const { email } = yield* confirmedUser("sjs-reset")
        const app = yield* supabaseClient
        expect((yield* call(() => app.auth.resetPasswordForEmail(email, { redirectTo: "http://localhost:3000/reset" }))).error).toBeNull()
        expect(yield* followLink(app, linkIn(yield* lastMailTo(email)))).toBe("recovery")
        expect((yield* call(() => app.auth.updateUser({ password: NEW_PASSWORD }))).error).toBeNull()
        const fresh = yield* supabaseClient
        expect((yield* call(() => fresh.auth.signInWithPassword({ email, password: PASSWORD }))).error).toMatchObject({ code: "invalid_credentials" })
        expect((yield* call(() => fresh.auth.signInWithPassword({ email, password: NEW_PASSWORD }))).error).toBeNull()
      }))

    it.effect("updateUser({ email }): both addresses get a code, and the change lands once both are confirmed", () =>
      Effect.gen(function*() {
        const { email, supabase } = yield* confirmedUser("sjs-change")
        const newEmail = uniqueEmail("sjs-change-new")
        const asked = yield* call(() => supabase.auth.updateUser({ email: newEmail }))
        expect(asked.error).toBeNull()
        expect(asked.data.user).toMatchObject({ email, new_email: newEmail })
        const toNew = codeIn(yield* lastMailTo(newEmail))
        const toCurrent = codeIn(yield* lastMailTo(email))
        expect((yield* call(() => supabase.auth.verifyOtp({ email: newEmail, token: toNew, type: "email_change" }))).error).toBeNull()
        expect((yield* call(() => supabase.auth.getUser())).data.user?.email).toBe(email)
        const done = yield* call(() => supabase.auth.verifyOtp({ email, token: toCurrent, type: "email_change" }))
        expect(done.error).toBeNull()
        expect((yield* call(() => supabase.auth.getUser())).data.user?.email).toBe(newEmail)
        const fresh = yield* supabaseClient
        expect((yield* call(() => fresh.auth.signInWithPassword({ email: newEmail, password: PASSWORD }))).error).toBeNull()
      }))
  })
})
