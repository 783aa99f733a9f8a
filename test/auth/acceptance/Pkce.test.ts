/**
 * The PKCE flow of email links through auth-js with `flowType: "pkce"`: the mailed link's GET /verify redirects with
 * `?code=`, and exchangeCodeForSession trades it, with the verifier auth-js kept, for a session at
 * POST /token?grant_type=pkce. Also the grant's refusals and the PKCE parameters' validation.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, codeIn, decodeJwt, linkIn, mailTo, PASSWORD, raw, uniqueEmail, uniquePhone, versionedError } from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"

/** What a browser's localStorage is to auth-js: here a Map, so the test can read the verifier it keeps. */
const memoryStorage = () => {
  const items = new Map<string, string>()
  return {
    items,
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key)
  }
}

const pkceClient = (url: string) => {
  const storage = memoryStorage()
  const { client } = authClient(url, { flowType: "pkce", persistSession: true, storage })
  return { client, storage }
}

/** GET of a mailed link as a browser makes it, without following the 303. */
const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => ({ status: response.status, location: new URL(response.headers.get("location") ?? "") }))
  )

/** Signs up with PKCE and follows the confirmation link: the client and the auth code it got back. */
const signedUpWithCode = (tag: string) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    const { client, storage } = pkceClient(url)
    const signUp = yield* call(() => client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: `${SITE_URL}/welcome` } }))
    expect(signUp.error).toBeNull()
    expect(signUp.data.session).toBeNull()
    const [mail] = yield* mailTo(email)
    const link = linkIn(mail!)
    expect(link.searchParams.get("token")).toMatch(/^pkce_[0-9a-f]{56}$/)
    const { status, location } = yield* follow(url, link)
    expect(status).toBe(303)
    expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/welcome`)
    expect(location.hash).toBe("")
    const code = location.searchParams.get("code")
    expect(code).toMatch(/^[0-9a-f-]{36}$/)
    return { url, email, client, storage, code: code!, mail: mail! }
  })

acceptance({ AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_EXTERNAL_PHONE_ENABLED: "true" })("PKCE email flows", (it) => {
  it.effect("signUp, the confirmation link's ?code=, exchangeCodeForSession: a session with amr email/signup", () =>
    Effect.gen(function*() {
      const { client, code, email } = yield* signedUpWithCode("pkce-signup")
      const exchanged = yield* call(() => client.exchangeCodeForSession(code))
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.user?.email).toBe(email)
      expect(exchanged.data.user?.email_confirmed_at).toBeTruthy()
      expect(decodeJwt(exchanged.data.session!.access_token).payload["amr"][0].method).toBe("email/signup")
      const user = yield* call(() => client.getUser())
      expect(user.data.user?.email).toBe(email)
    }))

  it.effect("a code is exchanged once: the second time is flow_state_not_found (404)", () =>
    Effect.gen(function*() {
      const { client, code, storage, url } = yield* signedUpWithCode("pkce-reuse")
      const verifier = [...storage.items.entries()].find(([key]) => key.endsWith("-code-verifier"))![1]
      expect((yield* call(() => client.exchangeCodeForSession(code))).error).toBeNull()
      const again = yield* raw(url, "/token?grant_type=pkce", { body: { auth_code: code, code_verifier: verifier }, apiVersion: true })
      expect(again.status).toBe(404)
      expect(again.json).toEqual(versionedError("flow_state_not_found", "invalid flow state, no valid flow state found"))
    }))

  it.effect("a wrong verifier is bad_code_verifier (400) and leaves the code usable with the right one", () =>
    Effect.gen(function*() {
      const { client, code, url } = yield* signedUpWithCode("pkce-wrong")
      const wrong = yield* raw(url, "/token?grant_type=pkce", { body: { auth_code: code, code_verifier: "x".repeat(64) }, apiVersion: true })
      expect(wrong.status).toBe(400)
      expect(wrong.json).toEqual(versionedError("bad_code_verifier", "code challenge does not match previously saved code verifier"))
      const other = pkceClient(url)
      const lost = yield* call(() => other.client.exchangeCodeForSession(code))
      expect(lost.error?.name).toBe("AuthPKCECodeVerifierMissingError")
      expect((yield* call(() => client.exchangeCodeForSession(code))).error).toBeNull()
    }))

  it.effect("an auth code older than 300 seconds is flow_state_expired (422)", () =>
    Effect.gen(function*() {
      const { client, code } = yield* signedUpWithCode("pkce-expired")
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE auth.flow_state SET created_at = created_at - interval '301 seconds' WHERE auth_code = ${code}`.pipe(Effect.orDie)
      const expired = yield* call(() => client.exchangeCodeForSession(code))
      expect(expired.error?.status).toBe(422)
      expect((expired.error as any)?.code).toBe("flow_state_expired")
    }))

  it.effect("the grant needs both fields, and an unknown code is flow_state_not_found", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const empty = yield* raw(url, "/token?grant_type=pkce", { body: { auth_code: "abc" }, apiVersion: true })
      expect(empty.status).toBe(400)
      expect(empty.json).toEqual(versionedError("validation_failed", "invalid request: both auth code and code verifier should be non-empty"))
      const unknown = yield* raw(url, "/token?grant_type=pkce", {
        body: { auth_code: "00000000-0000-4000-8000-000000000000", code_verifier: "v".repeat(43) },
        apiVersion: true
      })
      expect(unknown.status).toBe(404)
      expect(unknown.json.code).toBe("flow_state_not_found")
    }))

  it.effect("resetPasswordForEmail with PKCE: the link's code, exchangeCodeForSession (amr recovery), updateUser", () =>
    Effect.gen(function*() {
      const { client: first, code: signupCode, email, url } = yield* signedUpWithCode("pkce-recover")
      expect((yield* call(() => first.exchangeCodeForSession(signupCode))).error).toBeNull()
      const { client } = pkceClient(url)
      const reset = yield* call(() => client.resetPasswordForEmail(email, { redirectTo: `${SITE_URL}/reset` }))
      expect(reset.error).toBeNull()
      const mail = (yield* mailTo(email)).at(-1)!
      expect(mail.subject).toBe("Reset Your Password")
      const { location, status } = yield* follow(url, linkIn(mail))
      expect(status).toBe(303)
      expect(location.pathname).toBe("/reset")
      const exchanged = yield* call(() => client.exchangeCodeForSession(location.searchParams.get("code")!))
      expect(exchanged.error).toBeNull()
      expect(decodeJwt(exchanged.data.session!.access_token).payload["amr"][0].method).toBe("recovery")
      const updated = yield* call(() => client.updateUser({ password: `${PASSWORD}-2` }))
      expect(updated.error).toBeNull()
      const { client: fresh } = authClient(url)
      expect((yield* call(() => fresh.signInWithPassword({ email, password: `${PASSWORD}-2` }))).error).toBeNull()
    }))

  it.effect("a PKCE mail's code still verifies by POST /verify (token + email), for a session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("pkce-code")
      const { client } = pkceClient(url)
      expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
      const [mail] = yield* mailTo(email)
      const verified = yield* call(() => client.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))
      expect(verified.error).toBeNull()
      expect(verified.data.session?.access_token).toBeTruthy()
    }))

  it.effect("signInWithOtp with PKCE: the magic link's code signs in, amr magiclink", () =>
    Effect.gen(function*() {
      const { client: first, code: signupCode, email, url } = yield* signedUpWithCode("pkce-magic")
      expect((yield* call(() => first.exchangeCodeForSession(signupCode))).error).toBeNull()
      const { client } = pkceClient(url)
      expect((yield* call(() => client.signInWithOtp({ email, options: { emailRedirectTo: `${SITE_URL}/in` } }))).error).toBeNull()
      const mail = (yield* mailTo(email)).at(-1)!
      const { location } = yield* follow(url, linkIn(mail))
      const exchanged = yield* call(() => client.exchangeCodeForSession(location.searchParams.get("code")!))
      expect(exchanged.error).toBeNull()
      expect(decodeJwt(exchanged.data.session!.access_token).payload["amr"][0].method).toBe("magiclink")
    }))

  it.effect("bad PKCE parameters are 400 validation_failed; PKCE with a phone sign-up too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const challenge = "a".repeat(43)
      const cases: ReadonlyArray<[string, Record<string, unknown>, string]> = [
        ["/signup", { email: uniqueEmail("pkce-bad"), password: PASSWORD, code_challenge: challenge }, "PKCE flow requires code_challenge_method and code_challenge"],
        ["/signup", { email: uniqueEmail("pkce-bad"), password: PASSWORD, code_challenge: "short", code_challenge_method: "s256" }, "code_challenge has to be between 43 and 128 characters"],
        ["/recover", { email: uniqueEmail("pkce-bad"), code_challenge: `${"a".repeat(42)}+`, code_challenge_method: "S256" }, "code_challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes"],
        ["/otp", { email: uniqueEmail("pkce-bad"), code_challenge: challenge, code_challenge_method: "S512" }, "code_challenge_method has to be one of s256 or plain"],
        ["/magiclink", { email: uniqueEmail("pkce-bad"), code_challenge_method: "plain" }, "PKCE flow requires code_challenge_method and code_challenge"],
        ["/resend", { type: "signup", email: uniqueEmail("pkce-bad"), code_challenge: challenge }, "PKCE flow requires code_challenge_method and code_challenge"],
        ["/signup", { phone: uniquePhone(), password: PASSWORD, code_challenge: challenge, code_challenge_method: "s256" }, "PKCE not supported for phone signups"]
      ]
      for (const [path, body, message] of cases) {
        const response = yield* raw(url, path, { body, apiVersion: true })
        expect([path, response.status, response.json]).toEqual([path, 400, versionedError("validation_failed", message)])
      }
    }))
})
