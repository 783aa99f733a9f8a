/**
 * The everyday life of an app on @supabase/auth-js against Gatehouse, with confirmation switched off (autoconfirm):
 * sign-up, sign-in, the user, updates, refresh, sign-out, and the events the client derives from all of that.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import {
  AuthApiError,
  type AuthChangeEvent,
  type GoTrueClient,
  AuthSessionMissingError,
  AuthWeakPasswordError,
  isAuthApiError,
  type Session
} from "@supabase/auth-js"
import { Effect, Redacted } from "effect"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  authClient,
  call,
  decodeJwt,
  legacyError,
  linkIn,
  mailTo,
  nowSeconds,
  PASSWORD,
  raw,
  signHs256,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"
import { supabaseClient } from "../../support/SupabaseJs.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Every auth event the client emits, in order; resolves `ready` once the initial one has been delivered. */
const watch = (client: GoTrueClient) => {
  const events: Array<{ readonly event: AuthChangeEvent; readonly session: Session | null }> = []
  let ready!: () => void
  const initial = new Promise<void>((resolve) => (ready = resolve))
  client.onAuthStateChange((event, session) => {
    events.push({ event, session })
    if (event === "INITIAL_SESSION") ready()
  })
  return { events, ready: call(() => initial) }
}


/** A signed-in client for a new email user. */
const signedIn = (url: string, email = uniqueEmail("user"), password = PASSWORD) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const { data, error } = yield* call(() => client.signUp({ email, password }))
    expect(error).toBeNull()
    expect(data.session).not.toBeNull()
    return { client, email, session: data.session!, user: data.user! }
  })

/** Another client for the same user, with its own session. */
const secondDevice = (url: string, email: string, password = PASSWORD) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const { data, error } = yield* call(() => client.signInWithPassword({ email, password }))
    expect(error).toBeNull()
    return { client, session: data.session! }
  })

acceptance({
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_SMS_AUTOCONFIRM: "true",
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
  AUTH_PASSWORD_MIN_LENGTH: "8",
  AUTH_PASSWORD_REQUIRED_CHARACTERS: "abcdefghijklmnopqrstuvwxyz:ABCDEFGHIJKLMNOPQRSTUVWXYZ:0123456789"
})("auth-js session flows (autoconfirm)", (it) => {
  it.effect("email sign-up returns a session and the user; sign-in and getUser see the same user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("Signup")
      const signUp = yield* call(() => client.signUp({ email, password: PASSWORD, options: { data: { plan: "free" } } }))
      expect(signUp.error).toBeNull()
      const { session, user } = signUp.data
      expect(session).not.toBeNull()
      expect(session!.token_type).toBe("bearer")
      expect(session!.expires_in).toBe(3600)
      expect(session!.expires_at).toBe(decodeJwt(session!.access_token).payload["exp"])
      expect(session!.refresh_token).toMatch(/\S{12,}/)
      expect(user).toMatchObject({
        id: expect.stringMatching(UUID),
        aud: "authenticated",
        role: "authenticated",
        email: email.toLowerCase(),
        phone: "",
        email_confirmed_at: expect.any(String),
        app_metadata: { provider: "email", providers: ["email"] },
        user_metadata: { plan: "free" },
        is_anonymous: false
      })
      expect(user!.identities).toHaveLength(1)
      expect(user!.identities![0]).toMatchObject({ provider: "email", user_id: user!.id, id: user!.id })
      expect(session!.user.id).toBe(user!.id)

      const again = authClient(url).client
      const signIn = yield* call(() => again.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.error).toBeNull()
      expect(signIn.data.user!.id).toBe(user!.id)
      expect(signIn.data.session!.access_token).not.toBe(session!.access_token)
      expect(decodeJwt(signIn.data.session!.access_token).payload["session_id"])
        .not.toBe(decodeJwt(session!.access_token).payload["session_id"])

      const fetched = yield* call(() => again.getUser())
      expect(fetched.error).toBeNull()
      expect(fetched.data.user).toMatchObject({ id: user!.id, email: email.toLowerCase(), user_metadata: { plan: "free" } })
      expect(fetched.data.user!.last_sign_in_at).toEqual(expect.any(String))
    }))

  it.effect("phone sign-up and sign-in: the number is stored and returned without its +", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const phone = uniquePhone()
      const signUp = yield* call(() => client.signUp({ phone, password: PASSWORD }))
      expect(signUp.error).toBeNull()
      expect(signUp.data.session).not.toBeNull()
      expect(signUp.data.user).toMatchObject({
        phone: phone.slice(1),
        email: "",
        phone_confirmed_at: expect.any(String),
        app_metadata: { provider: "phone", providers: ["phone"] }
      })
      expect(decodeJwt(signUp.data.session!.access_token).payload).toMatchObject({ phone: phone.slice(1), email: "" })

      const signIn = yield* call(() => authClient(url).client.signInWithPassword({ phone, password: PASSWORD }))
      expect(signIn.error).toBeNull()
      expect(signIn.data.user!.id).toBe(signUp.data.user!.id)
    }))

  it.effect("onAuthStateChange sees SIGNED_IN, TOKEN_REFRESHED, USER_UPDATED and SIGNED_OUT in order", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("events")
      yield* signedIn(url, email)
      const { client } = authClient(url)
      const { events, ready } = watch(client)
      yield* ready

      const signIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.error).toBeNull()
      const refreshed = yield* call(() => client.refreshSession())
      expect(refreshed.error).toBeNull()
      const updated = yield* call(() => client.updateUser({ data: { theme: "dark" } }))
      expect(updated.error).toBeNull()
      const signOut = yield* call(() => client.signOut())
      expect(signOut.error).toBeNull()

      expect(events.map((e) => e.event)).toEqual(["INITIAL_SESSION", "SIGNED_IN", "TOKEN_REFRESHED", "USER_UPDATED", "SIGNED_OUT"])
      expect(events[0]!.session).toBeNull()
      expect(events[1]!.session!.access_token).toBe(signIn.data.session!.access_token)
      expect(events[2]!.session!.refresh_token).toBe(refreshed.data.session!.refresh_token)
      expect(events[2]!.session!.refresh_token).not.toBe(signIn.data.session!.refresh_token)
      expect(events[3]!.session!.user.user_metadata).toMatchObject({ theme: "dark", email_verified: true })
      expect(events[4]!.session).toBeNull()
      const after = yield* call(() => client.getSession())
      expect(after.data.session).toBeNull()
    }))

  it.effect("setSession adopts tokens minted elsewhere (as SSR apps do): SIGNED_IN, then getUser works", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { session, user } = yield* signedIn(url)
      const { client } = authClient(url)
      const { events, ready } = watch(client)
      yield* ready
      const adopted = yield* call(() =>
        client.setSession({ access_token: session.access_token, refresh_token: session.refresh_token })
      )
      expect(adopted.error).toBeNull()
      expect(adopted.data.user!.id).toBe(user.id)
      expect(events.map((e) => e.event)).toEqual(["INITIAL_SESSION", "SIGNED_IN"])
      expect((yield* call(() => client.getUser())).data.user!.id).toBe(user.id)
    }))

  it.effect("updateUser data is a shallow merge in which null deletes a key, and new tokens carry it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("merge")
      const signUp = yield* call(() =>
        client.signUp({
          email,
          password: PASSWORD,
          options: { data: { keep: 1, drop: "me", nested: { x: 1, y: 2 } } }
        })
      )
      expect(signUp.error).toBeNull()
      const updated = yield* call(() => client.updateUser({ data: { drop: null, added: true, nested: { z: 3 } } }))
      expect(updated.error).toBeNull()
      // The identity's claims, merged in at sign-up, stay unless the update removes them.
      const claims = { email: email.toLowerCase(), email_verified: true, phone_verified: false, sub: signUp.data.user!.id }
      const expected = { keep: 1, added: true, nested: { z: 3 }, ...claims }
      expect(updated.data.user!.user_metadata).toEqual(expected)
      expect((yield* call(() => client.getUser())).data.user!.user_metadata).toEqual(expected)
      // The access token in hand is not re-issued by PUT /user; the next one carries the new metadata.
      const refreshed = yield* call(() => client.refreshSession())
      expect(decodeJwt(refreshed.data.session!.access_token).payload["user_metadata"]).toEqual(expected)
    }))

  it.effect("a password change: the old password stops working, the new one works, other sessions end", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, email } = yield* signedIn(url)
      const other = yield* secondDevice(url, email)
      const newPassword = "N3w-Password-Here"

      const same = yield* call(() => client.updateUser({ password: PASSWORD }))
      expect(same.error).toBeInstanceOf(AuthApiError)
      expect(same.error).toMatchObject({ status: 422, code: "same_password" })

      const changed = yield* call(() => client.updateUser({ password: newPassword }))
      expect(changed.error).toBeNull()
      expect((yield* call(() => client.getUser())).error).toBeNull()

      const old = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(old.error).toBeInstanceOf(AuthApiError)
      expect(old.error).toMatchObject({ status: 400, code: "invalid_credentials", message: "Invalid login credentials" })
      const fresh = yield* call(() => authClient(url).client.signInWithPassword({ email, password: newPassword }))
      expect(fresh.error).toBeNull()

      // GoTrue logs every other session out on a password change.
      const elsewhere = yield* call(() => other.client.getUser())
      expect(elsewhere.error).toBeInstanceOf(AuthSessionMissingError)
      expect((yield* call(() => other.client.getSession())).data.session).toBeNull()
    }))

  it.effect("an email change mails both the new and the current address and leaves the email as it is", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, email } = yield* signedIn(url)
      const next = uniqueEmail("moved")
      const updated = yield* call(() => client.updateUser({ email: next }, { emailRedirectTo: "http://localhost:3000/welcome" }))
      expect(updated.error).toBeNull()
      expect(updated.data.user).toMatchObject({ email, new_email: next, email_change_sent_at: expect.any(String) })

      const toNew = yield* mailTo(next)
      const toCurrent = yield* mailTo(email)
      expect(toNew).toHaveLength(1)
      expect(toCurrent).toHaveLength(1)
      for (const mail of [...toNew, ...toCurrent]) {
        expect(mail.subject).toBe("Confirm Email Change")
        const link = linkIn(mail)
        expect(`${link.origin}${link.pathname}`).toBe("http://localhost:9999/verify")
        expect(link.searchParams.get("type")).toBe("email_change")
        expect(link.searchParams.get("redirect_to")).toBe("http://localhost:3000/welcome")
      }
      // Two different confirmations, one per address.
      expect(linkIn(toNew[0]!).searchParams.get("token")).not.toBe(linkIn(toCurrent[0]!).searchParams.get("token"))
      expect((yield* call(() => client.getUser())).data.user!.email).toBe(email)
    }))

  it.effect("refreshSession rotates; the immediate parent is forgiven, older tokens and unknown ones are refused", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, session } = yield* signedIn(url)
      const first = session.refresh_token

      const second = yield* call(() => client.refreshSession())
      expect(second.error).toBeNull()
      const secondToken = second.data.session!.refresh_token
      expect(secondToken).not.toBe(first)
      // A refresh adds no claim (as in GoTrue), so within the same second the new access token may equal the old one.
      expect(decodeJwt(second.data.session!.access_token).payload["session_id"]).toBe(decodeJwt(session.access_token).payload["session_id"])
      expect(decodeJwt(second.data.session!.access_token).payload["amr"].map((e: { method: string }) => e.method).sort())
        .toEqual(["password"])

      // A client that lost the response retries with the parent within the reuse interval: same child.
      const retried = yield* call(() => authClient(url).client.refreshSession({ refresh_token: first }))
      expect(retried.error).toBeNull()
      expect(retried.data.session!.refresh_token).toBe(secondToken)

      const third = yield* call(() => client.refreshSession())
      expect(third.error).toBeNull()
      const thirdToken = third.data.session!.refresh_token

      const reused = yield* call(() => authClient(url).client.refreshSession({ refresh_token: first }))
      expect(reused.error).toBeInstanceOf(AuthApiError)
      expect(reused.error).toMatchObject({ status: 400, code: "refresh_token_already_used", message: "Invalid Refresh Token: Already Used" })
      // Reuse detection ended the session: the current token went with it, and so did its access tokens.
      const current = yield* call(() => authClient(url).client.refreshSession({ refresh_token: thirdToken }))
      expect(current.error).toMatchObject({ status: 400, code: "refresh_token_not_found" })
      expect((yield* call(() => client.getUser(third.data.session!.access_token))).error).toBeInstanceOf(AuthSessionMissingError)

      const unknown = yield* call(() => authClient(url).client.refreshSession({ refresh_token: `${thirdToken.slice(0, -4)}AAAA` }))
      expect(unknown.error).toBeInstanceOf(AuthApiError)
      expect(unknown.error).toMatchObject({ status: 400, code: "refresh_token_not_found" })
      const neverIssued = yield* call(() => authClient(url).client.refreshSession({ refresh_token: "abcdefghijkl" }))
      expect(neverIssued.error).toMatchObject({
        status: 400,
        code: "refresh_token_not_found",
        message: "Invalid Refresh Token: Refresh Token Not Found"
      })
    }))

  it.effect("signOut scopes: others keeps this session, local ends only this one, global ends all", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client: a, email } = yield* signedIn(url)
      const b = yield* secondDevice(url, email)
      const c = yield* secondDevice(url, email)

      expect((yield* call(() => a.signOut({ scope: "others" }))).error).toBeNull()
      expect((yield* call(() => a.getUser())).error).toBeNull()
      expect((yield* call(() => b.client.getUser())).error).toBeInstanceOf(AuthSessionMissingError)
      expect((yield* call(() => c.client.getUser())).error).toBeInstanceOf(AuthSessionMissingError)
      // Their refresh tokens went with their sessions.
      const revived = yield* call(() => authClient(url).client.refreshSession({ refresh_token: c.session.refresh_token }))
      expect(revived.error).toMatchObject({ status: 400, code: "refresh_token_not_found" })

      const d = yield* secondDevice(url, email)
      expect((yield* call(() => a.signOut({ scope: "local" }))).error).toBeNull()
      expect((yield* call(() => a.getSession())).data.session).toBeNull()
      expect((yield* call(() => d.client.getUser())).error).toBeNull()

      const e = yield* secondDevice(url, email)
      expect((yield* call(() => e.client.signOut())).error).toBeNull()
      expect((yield* call(() => d.client.getUser())).error).toBeInstanceOf(AuthSessionMissingError)
      expect((yield* call(() => authClient(url).client.getUser(e.session.access_token))).error)
        .toBeInstanceOf(AuthSessionMissingError)
    }))

  it.effect("POST /logout answers 204 with no body; an unknown scope is a 400 validation_failed", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { session } = yield* signedIn(url)
      const bogus = yield* raw(url, "/logout?scope=bogus", { method: "POST", bearer: session.access_token })
      expect(bogus.status).toBe(400)
      expect(bogus.json).toEqual(legacyError(400, "validation_failed", "Unsupported logout scope \"bogus\""))
      const bogusVersioned = yield* raw(url, "/logout?scope=bogus", { method: "POST", bearer: session.access_token, apiVersion: true })
      expect(bogusVersioned.json).toEqual(versionedError("validation_failed", "Unsupported logout scope \"bogus\""))

      const local = yield* raw(url, "/logout?scope=local", { method: "POST", bearer: session.access_token })
      expect(local.status).toBe(204)
      expect(local.text).toBe("")
      const again = yield* raw(url, "/logout", { method: "POST", bearer: session.access_token, apiVersion: true })
      expect(again.status).toBe(403)
      expect(again.json).toEqual(versionedError("session_not_found", "Session from session_id claim in JWT does not exist"))
    }))

  it.effect("after a server-side logout, getUser gets session_not_found and the client signs itself out", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, email, session } = yield* signedIn(url)
      const { events } = watch(client)
      const elsewhere = yield* secondDevice(url, email)
      expect((yield* call(() => elsewhere.client.signOut({ scope: "global" }))).error).toBeNull()

      const raw403 = yield* raw(url, "/user", { bearer: session.access_token })
      expect(raw403.status).toBe(403)
      expect(raw403.json).toEqual(legacyError(403, "session_not_found", "Session from session_id claim in JWT does not exist"))

      const { data, error } = yield* call(() => client.getUser())
      expect(error).toBeInstanceOf(AuthSessionMissingError)
      expect(data.user).toBeNull()
      expect((yield* call(() => client.getSession())).data.session).toBeNull()
      expect(events.map((e) => e.event)).toContain("SIGNED_OUT")
      // signOut on a client whose session is already gone is not an error.
      expect((yield* call(() => client.signOut())).error).toBeNull()
    }))

  it.effect("signInAnonymously gives an anonymous session: is_anonymous claim, amr anonymous, no identities", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const { data, error } = yield* call(() => client.signInAnonymously({ options: { data: { theme: "dark" } } }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ is_anonymous: true, email: "", phone: "", role: "authenticated", user_metadata: { theme: "dark" } })
      expect(data.user!.identities).toEqual([])
      expect(data.user!.app_metadata["provider"]).toBeUndefined()
      const claims = decodeJwt(data.session!.access_token).payload
      expect(claims["is_anonymous"]).toBe(true)
      expect(claims["role"]).toBe("authenticated")
      expect(claims["amr"]).toEqual([{ method: "anonymous", timestamp: expect.any(Number) }])
      expect((yield* call(() => client.getUser())).data.user!.is_anonymous).toBe(true)
    }))

  it.effect("a duplicate email sign-up with autoconfirm is a 422 user_already_exists, as GoTrue answers", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { email, user } = yield* signedIn(url)
      const { data, error } = yield* call(() => authClient(url).client.signUp({ email, password: "Other-Passw0rd" }))
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 422, code: "user_already_exists", message: "User already registered" })
      expect(data.session).toBeNull()
      const legacy = yield* raw(url, "/signup", { body: { email: email.toUpperCase(), password: PASSWORD } })
      expect(legacy.status).toBe(422)
      expect(legacy.headers.get("x-sb-error-code")).toBe("user_already_exists")
      expect(legacy.json).toEqual(legacyError(422, "user_already_exists", "User already registered"))
      const rows = yield* sql<{ count: string }>`SELECT count(*)::text AS count FROM auth.users WHERE email = ${email}`
      expect(rows[0]!.count).toBe("1")
      // The existing account is untouched.
      const signIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.data.user?.id).toBe(user.id)
    }))

  it.effect("a new email user's user_metadata carries email, email_verified, phone_verified and sub, in JSON and JWT", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("Meta")
      const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD, options: { data: { plan: "pro", sub: "spoofed" } } }))
      expect(error).toBeNull()
      const id = data.user!.id
      // The identity's claims win over the request's data, as in GoTrue.
      const expected = { plan: "pro", email: email.toLowerCase(), email_verified: true, phone_verified: false, sub: id }
      expect(data.user!.user_metadata).toEqual(expected)
      expect(decodeJwt(data.session!.access_token).payload["user_metadata"]).toEqual(expected)
      expect((yield* call(() => client.getUser())).data.user!.user_metadata).toEqual(expected)
      // The identity keeps what the address was when it was created: not yet verified.
      expect(data.user!.identities![0]!.identity_data).toMatchObject({ email: email.toLowerCase(), email_verified: false, sub: id })

      const phone = uniquePhone()
      const byPhone = yield* call(() => authClient(url).client.signUp({ phone, password: PASSWORD }))
      expect(byPhone.error).toBeNull()
      expect(byPhone.data.user!.user_metadata).toEqual({
        phone: byPhone.data.user!.phone, email_verified: false, phone_verified: true, sub: byPhone.data.user!.id
      })
    }))

  it.effect("every response that issues a session carries Sb-Auth-User-Id, -Session-Id and -Refresh-Token-Prefix", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("headers")
      const expectHeaders = (response: { headers: Headers; json: unknown }) => {
        const body = response.json as { refresh_token: string; access_token: string; user: { id: string } }
        expect(response.headers.get("sb-auth-user-id")).toBe(body.user.id)
        expect(response.headers.get("sb-auth-session-id")).toBe(decodeJwt(body.access_token).payload["session_id"])
        expect(response.headers.get("sb-auth-refresh-token-prefix")).toBe(body.refresh_token.slice(0, 5))
        return body
      }
      const signUp = yield* raw(url, "/signup", { body: { email, password: PASSWORD } })
      expect(signUp.status).toBe(200)
      expectHeaders(signUp)
      const signIn = yield* raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })
      const { refresh_token } = expectHeaders(signIn)
      const refreshed = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token } })
      expect(refreshed.status).toBe(200)
      expectHeaders(refreshed)
      // Errors carry none of them, but do carry the error code.
      const failed = yield* raw(url, "/token?grant_type=password", { body: { email, password: "Wr0ng-Password" } })
      expect(failed.headers.get("sb-auth-user-id")).toBeNull()
      expect(failed.headers.get("x-sb-error-code")).toBe("invalid_credentials")
    }))

  it.effect("a duplicate phone sign-up with SMS autoconfirm is a 400 \"User already registered\"", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const phone = uniquePhone()
      expect((yield* call(() => authClient(url).client.signUp({ phone, password: PASSWORD }))).error).toBeNull()

      const { data, error } = yield* call(() => authClient(url).client.signUp({ phone, password: PASSWORD }))
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 400, code: "user_already_exists", message: "User already registered" })
      expect(data.session).toBeNull()

      const legacy = yield* raw(url, "/signup", { body: { phone, password: PASSWORD } })
      expect(legacy.status).toBe(400)
      expect(legacy.headers.get("x-sb-error-code")).toBe("user_already_exists")
      expect(legacy.json).toEqual(legacyError(400, "user_already_exists", "User already registered"))
      const versioned = yield* raw(url, "/signup", { body: { phone, password: PASSWORD }, apiVersion: true })
      expect(versioned.status).toBe(400)
      expect(versioned.headers.get("x-supabase-api-version")).toBe("2024-01-01")
      expect(versioned.json).toEqual(versionedError("user_already_exists", "User already registered"))
    }))

  it.effect("wrong credentials are invalid_credentials, whether the user exists or not", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email } = yield* signedIn(url)
      for (const attempt of [{ email, password: "Wr0ng-Password" }, { email: uniqueEmail("nobody"), password: PASSWORD }]) {
        const { data, error } = yield* call(() => authClient(url).client.signInWithPassword(attempt))
        expect(error).toBeInstanceOf(AuthApiError)
        expect(isAuthApiError(error)).toBe(true)
        expect(error).toMatchObject({ status: 400, code: "invalid_credentials", message: "Invalid login credentials" })
        expect(data.session).toBeNull()
      }
    }))

  it.effect("weak passwords are AuthWeakPasswordError with GoTrue's reasons, on sign-up and on updateUser", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
        ["Sh0rt", ["length"]],
        ["alllowercaseletters", ["characters"]],
        ["short", ["length", "characters"]]
      ]
      const { client } = yield* signedIn(url)
      for (const [password, reasons] of cases) {
        const signUp = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("weak"), password }))
        expect(signUp.error).toBeInstanceOf(AuthWeakPasswordError)
        expect(signUp.error).toMatchObject({ status: 422, code: "weak_password", reasons })
        expect(signUp.data.user).toBeNull()
        const update = yield* call(() => client.updateUser({ password }))
        expect(update.error).toBeInstanceOf(AuthWeakPasswordError)
        expect((update.error as AuthWeakPasswordError).reasons).toEqual(reasons)
      }
      const tooLong = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("long"), password: `Aa1${"x".repeat(97)}` }))
      expect(tooLong.error).toBeInstanceOf(AuthApiError)
      expect(tooLong.error).not.toBeInstanceOf(AuthWeakPasswordError)
      expect(tooLong.error).toMatchObject({ status: 400, code: "validation_failed", message: "Password cannot be longer than 72 characters" })
    }))

  it.effect("supabase-js with createClient(url, anonKey) signs up, reads the user, refreshes and signs out", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const config = yield* AuthConfig
      // A project's anon key: a JWT with role anon and, like many in the wild, no exp; supabase-js sends it as
      // apikey and as the bearer until a user signs in, and calls the auth API under {url}/auth/v1.
      const anonKey = signHs256({ iss: "supabase", role: "anon", iat: nowSeconds() }, Redacted.value(config.jwt.secret))
      const supabase = supabaseClient(url, anonKey)
      const events: Array<string> = []
      supabase.auth.onAuthStateChange((event) => void events.push(event))
      const email = uniqueEmail("supabase-js")

      const signUp = yield* call(() => supabase.auth.signUp({ email, password: PASSWORD, options: { data: { via: "supabase-js" } } }))
      expect(signUp.error).toBeNull()
      expect(signUp.data.session).not.toBeNull()
      const user = yield* call(() => supabase.auth.getUser())
      expect(user.error).toBeNull()
      expect(user.data.user).toMatchObject({ email, user_metadata: { via: "supabase-js", email, email_verified: true } })
      const claims = yield* call(() => supabase.auth.getClaims())
      expect(claims.error).toBeNull()
      expect(claims.data!.claims).toMatchObject({ sub: user.data.user!.id, email, role: "authenticated" })
      const updated = yield* call(() => supabase.auth.updateUser({ data: { via: null, step: 2 } }))
      expect(updated.data.user!.user_metadata).toEqual({
        step: 2, email, email_verified: true, phone_verified: false, sub: user.data.user!.id
      })
      const refreshed = yield* call(() => supabase.auth.refreshSession())
      expect(refreshed.error).toBeNull()
      expect((yield* call(() => supabase.auth.signOut())).error).toBeNull()
      const after = yield* call(() => supabase.auth.getUser())
      expect(after.error).toBeInstanceOf(AuthSessionMissingError)
      const signIn = yield* call(() => supabase.auth.signInWithPassword({ email, password: "Wr0ng-Password" }))
      expect(signIn.error).toMatchObject({ status: 400, code: "invalid_credentials" })
      expect(events).toEqual(["INITIAL_SESSION", "SIGNED_IN", "USER_UPDATED", "TOKEN_REFRESHED", "SIGNED_OUT"])
    }))
})
