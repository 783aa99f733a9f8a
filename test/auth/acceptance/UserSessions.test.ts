/**
 * Sessions a user can see and end (GET /user/sessions, DELETE /user/sessions/{id}) and an admin's view of them
 * (GET and DELETE /admin/users/{id}/sessions), driven as an app would: supabase-js signs in on two devices, the app
 * calls the routes with the session's access token.
 */
import { describe, expect } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { supabaseClient } from "../../support/SupabaseJs.js"
import { acceptance, adminJwt, call, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"

/** A supabase-js client on a device: its requests carry the device's User-Agent and, behind the proxy, its address. */
const device = (url: string, userAgent: string, address: string) =>
  supabaseClient(url, adminJwt("anon"), {}, { headers: { "User-Agent": userAgent, "X-Real-IP": address } }).auth

/** A user signed up on one device and signed in on another. */
const twoDevices = (url: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail("sessions")
    const laptop = device(url, "Laptop/1.0", "203.0.113.10")
    const phone = device(url, "Phone/2.0", "2001:db8::7")
    const up = yield* call(() => laptop.signUp({ email, password: PASSWORD }))
    expect(up.error).toBeNull()
    const inn = yield* call(() => phone.signInWithPassword({ email, password: PASSWORD }))
    expect(inn.error).toBeNull()
    return { email, laptop, phone, laptopSession: up.data.session!, phoneSession: inn.data.session!, userId: up.data.user!.id }
  })

const sessionIdOf = (accessToken: string): string =>
  JSON.parse(Buffer.from(accessToken.split(".")[1]!, "base64url").toString())["session_id"]

const admin = { bearer: adminJwt(), headers: { apikey: adminJwt() } }

const env = { AUTH_MAILER_AUTOCONFIRM: "true", AUTH_RATE_LIMIT_HEADER: "X-Real-IP" }

describe("a user's sessions", () => {
  acceptance(env)((it) => {
    it.effect("lists each session with its device and address, marks the current one, and shows no token", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { laptopSession, phoneSession } = yield* twoDevices(url)
        const listed = yield* raw(url, "/user/sessions", { bearer: laptopSession.access_token })
        expect(listed.status).toBe(200)
        const sessions = listed.json.sessions as Array<Record<string, unknown>>
        // Newest first: the phone signed in after the laptop signed up.
        expect(sessions.map((s) => s["id"])).toEqual([sessionIdOf(phoneSession.access_token), sessionIdOf(laptopSession.access_token)])
        expect(sessions[0]).toMatchObject({ user_agent: "Phone/2.0", ip: "2001:db8::7", aal: "aal1", current: false, not_after: null })
        expect(sessions[1]).toMatchObject({ user_agent: "Laptop/1.0", ip: "203.0.113.10", aal: "aal1", current: true })
        expect(Date.parse(sessions[1]!["created_at"] as string)).not.toBeNaN()
        expect(listed.text).not.toContain(laptopSession.refresh_token)
        // Under /auth/v1 too, where supabase-js's URL puts it.
        const prefixed = yield* raw(url, "/auth/v1/user/sessions", { bearer: phoneSession.access_token })
        expect((prefixed.json.sessions as Array<Record<string, unknown>>).find((s) => s["current"] === true)?.["user_agent"]).toBe("Phone/2.0")
        // No bearer: GoTrue's refusal for every signed-in route.
        expect((yield* raw(url, "/user/sessions")).status).toBe(401)
      }))

    it.effect("ending another session stops its refresh token and its access token at once; the current one needs /logout", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { laptopSession, phone, phoneSession } = yield* twoDevices(url)
        const phoneId = sessionIdOf(phoneSession.access_token)
        const ended = yield* raw(url, `/user/sessions/${phoneId}`, { method: "DELETE", bearer: laptopSession.access_token })
        expect(ended.status).toBe(204)
        expect(ended.text).toBe("")
        const refreshed = yield* call(() => phone.refreshSession({ refresh_token: phoneSession.refresh_token }))
        expect(refreshed.error?.code).toBe("refresh_token_not_found")
        const user = yield* raw(url, "/user", { bearer: phoneSession.access_token, apiVersion: true })
        expect([user.status, user.json.code]).toEqual([403, "session_not_found"])
        const left = yield* raw(url, "/user/sessions", { bearer: laptopSession.access_token })
        expect((left.json.sessions as Array<unknown>).length).toBe(1)

        const current = yield* raw(url, `/user/sessions/${sessionIdOf(laptopSession.access_token)}`, { method: "DELETE", bearer: laptopSession.access_token, apiVersion: true })
        expect([current.status, current.json.code]).toEqual([400, "validation_failed"])
        // Again, and an id that never was, and one that is no id: not found, whatever the reason.
        for (const id of [phoneId, randomUUID(), "not-a-uuid"]) {
          const gone = yield* raw(url, `/user/sessions/${id}`, { method: "DELETE", bearer: laptopSession.access_token, apiVersion: true })
          expect([gone.status, gone.json.code]).toEqual([404, "session_not_found"])
        }
        // The laptop's session is untouched by all of that.
        expect((yield* raw(url, "/user", { bearer: laptopSession.access_token })).status).toBe(200)
      }))

    it.effect("one user cannot see or end another's sessions", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const victim = yield* twoDevices(url)
        const other = yield* twoDevices(url)
        const victimPhone = sessionIdOf(victim.phoneSession.access_token)
        const listed = yield* raw(url, "/user/sessions", { bearer: other.laptopSession.access_token })
        expect(listed.text).not.toContain(victimPhone)
        const attempt = yield* raw(url, `/user/sessions/${victimPhone}`, { method: "DELETE", bearer: other.laptopSession.access_token, apiVersion: true })
        expect([attempt.status, attempt.json.code]).toEqual([404, "session_not_found"])
        expect((yield* raw(url, "/user", { bearer: victim.phoneSession.access_token })).status).toBe(200)
      }))

    it.effect("the audit log records which session a user ended", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { email, laptopSession, phoneSession } = yield* twoDevices(url)
        const phoneId = sessionIdOf(phoneSession.access_token)
        expect((yield* raw(url, `/user/sessions/${phoneId}`, { method: "DELETE", bearer: laptopSession.access_token })).status).toBe(204)
        const log = yield* raw(url, `/admin/audit?query=${encodeURIComponent(`author:${email}`)}`, admin)
        const entry = (log.json as Array<{ payload: Record<string, any> }>).find((e) => e.payload["action"] === "logout")
        expect(entry?.payload["traits"]).toEqual({ scope: "session", session_id: phoneId })
      }))

    it.effect("an admin lists a user's sessions and ends them all; a user that is not there is 404", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { email, laptop, laptopSession, phoneSession, userId } = yield* twoDevices(url)
        const listed = yield* raw(url, `/admin/users/${userId}/sessions`, admin)
        expect(listed.status).toBe(200)
        const sessions = listed.json.sessions as Array<Record<string, unknown>>
        expect(sessions.map((s) => s["user_agent"])).toEqual(["Phone/2.0", "Laptop/1.0"])
        // No caller's session here, so no `current`.
        expect(sessions.every((s) => !("current" in s))).toBe(true)

        // A user's own token is not an admin's.
        const notAdmin = yield* raw(url, `/admin/users/${userId}/sessions`, { method: "DELETE", bearer: laptopSession.access_token })
        expect(notAdmin.status).toBe(403)
        const ended = yield* raw(url, `/admin/users/${userId}/sessions`, { method: "DELETE", ...admin })
        expect(ended.status).toBe(204)
        for (const session of [laptopSession, phoneSession]) {
          expect((yield* raw(url, "/user", { bearer: session.access_token })).status).toBe(403)
        }
        const refreshed = yield* call(() => laptop.refreshSession({ refresh_token: laptopSession.refresh_token }))
        expect(refreshed.error?.code).toBe("refresh_token_not_found")
        expect((yield* raw(url, `/admin/users/${userId}/sessions`, admin)).json).toEqual({ sessions: [] })
        // The user can sign in again: ending sessions is not a ban.
        expect((yield* call(() => laptop.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()

        for (const id of [randomUUID(), "nope"]) {
          const missing = yield* raw(url, `/admin/users/${id}/sessions`, { ...admin, apiVersion: true })
          expect(missing.status).toBe(404)
        }
      }))

    it.effect("a password change ends the user's other sessions, by default, as in GoTrue", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { laptop, laptopSession, phoneSession } = yield* twoDevices(url)
        yield* call(() => laptop.setSession({ access_token: laptopSession.access_token, refresh_token: laptopSession.refresh_token }))
        expect((yield* call(() => laptop.updateUser({ password: `${PASSWORD}-new` }))).error).toBeNull()
        expect((yield* raw(url, "/user", { bearer: phoneSession.access_token })).status).toBe(403)
        const left = yield* raw(url, "/user/sessions", { bearer: laptopSession.access_token })
        expect((left.json.sessions as Array<Record<string, unknown>>).map((s) => s["current"])).toEqual([true])
      }))
  })
})

describe("SECURITY_PASSWORD_CHANGE_ENDS_OTHER_SESSIONS=false", () => {
  acceptance({ ...env, AUTH_SECURITY_PASSWORD_CHANGE_ENDS_OTHER_SESSIONS: "false" })((it) => {
    it.effect("a password change leaves the user's other sessions alone", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { laptop, laptopSession, phoneSession } = yield* twoDevices(url)
        yield* call(() => laptop.setSession({ access_token: laptopSession.access_token, refresh_token: laptopSession.refresh_token }))
        expect((yield* call(() => laptop.updateUser({ password: `${PASSWORD}-new` }))).error).toBeNull()
        expect((yield* raw(url, "/user", { bearer: phoneSession.access_token })).status).toBe(200)
        const listed = yield* raw(url, "/user/sessions", { bearer: phoneSession.access_token })
        expect((listed.json.sessions as Array<unknown>).length).toBe(2)
      }))
  })
})
