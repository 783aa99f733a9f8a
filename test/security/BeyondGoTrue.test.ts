/**
 * Issue 22, part 4, "Beyond GoTrue, where it costs apps nothing": attacks GoTrue lets through and Gatehouse refuses,
 * each tried against a running server through real clients (auth-js, fetch, a browser that keeps cookies), with the
 * control that shows the same server still serves the honest user:
 * - a stolen refresh token replayed ends the session, so every access token of it stops working at GET /user;
 * - an OAuth /callback from a browser other than the one that started the flow is refused, creating and linking
 *   nothing (sign-in CSRF, a leaked callback URL, an attacker's link flow finished in a victim's browser);
 * - with CORS_ALLOWED_ORIGINS, CORS answers only the listed origins.
 * The rules beneath are tested on their own in test/auth/sessions (SessionsRules, RefreshModel, RefreshConcurrency),
 * test/auth/external/External.test.ts, test/auth/domain/BrowserBinding.test.ts and test/platform/Cors.test.ts.
 */
import { randomInt, randomUUID } from "node:crypto"
import { AuthSessionMissingError } from "@supabase/auth-js"
import { afterAll, describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, PASSWORD, raw, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { browser } from "../auth/support/Browser.js"
import { GITHUB_CODE, GITHUB_REDIRECT_URI, githubEnv, octocat, startGitHubFake } from "../auth/support/GitHubFake.js"

const SITE_URL = "http://localhost:3000"

// ---------------------------------------------------------------------------------------------------------------
// A stolen refresh token, replayed
// ---------------------------------------------------------------------------------------------------------------

/** GET /user with an access token, as auth-js sends it: the status and GoTrue's error code. */
const userWith = (url: string, accessToken: string) =>
  Effect.map(raw(url, "/user", { bearer: accessToken, apiVersion: true }), (response) => [response.status, response.json?.code])

describe("a stolen refresh token, replayed", () => {
  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("ends the session: the thief's and the victim's access tokens are refused at GET /user, and no refresh token works", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const victim = authClient(url).client
        const email = uniqueEmail("victim")
        const { data } = yield* call(() => victim.signUp({ email, password: PASSWORD }))
        const stolen = data.session!
        // The thief, with the stolen session, refreshes first and twice (keeping it warm), so the victim's token is
        // now neither current nor the current one's parent: its next use is reuse, however soon it comes.
        const thief = authClient(url).client
        const first = yield* call(() => thief.refreshSession({ refresh_token: stolen.refresh_token }))
        const second = yield* call(() => thief.refreshSession({ refresh_token: first.data.session!.refresh_token }))
        const thiefSession = second.data.session!
        expect(yield* userWith(url, thiefSession.access_token)).toEqual([200, undefined])
        expect(yield* userWith(url, stolen.access_token)).toEqual([200, undefined])

        const replay = yield* call(() => victim.refreshSession({ refresh_token: stolen.refresh_token }))
        expect(replay.error).toMatchObject({ status: 400, code: "refresh_token_already_used" })

        expect(yield* userWith(url, thiefSession.access_token)).toEqual([403, "session_not_found"])
        expect(yield* userWith(url, stolen.access_token)).toEqual([403, "session_not_found"])
        // auth-js reads that as signed out.
        expect((yield* call(() => thief.getUser(thiefSession.access_token))).error).toBeInstanceOf(AuthSessionMissingError)
        const revived = yield* call(() => authClient(url).client.refreshSession({ refresh_token: thiefSession.refresh_token }))
        expect(revived.error).toMatchObject({ status: 400, code: "refresh_token_not_found" })
        // The victim signs in again as usual.
        const again = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
        expect(yield* userWith(url, again.data.session!.access_token)).toEqual([200, undefined])

        // The audit log says why the session ended.
        const audit = yield* raw(url, `/admin/audit?query=author:${encodeURIComponent(email)}`, { bearer: adminJwt() })
        expect(audit.json.map((entry: any) => entry.payload.traits)).toContainEqual({
          reason: "refresh_token_reused",
          session_id: JSON.parse(Buffer.from(stolen.access_token.split(".")[1]!, "base64url").toString()).session_id
        })
      }))

    it.effect("a race within the reuse interval (two tabs refreshing one token at once) ends nothing", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { data } = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("tabs"), password: PASSWORD }))
        const token = data.session!.refresh_token
        const tabs = yield* Effect.all(
          Array.from({ length: 4 }, () => call(() => authClient(url).client.refreshSession({ refresh_token: token }))),
          { concurrency: "unbounded" }
        )
        expect(tabs.map((tab) => tab.error)).toEqual([null, null, null, null])
        expect(new Set(tabs.map((tab) => tab.data.session!.refresh_token)).size).toBe(1)
        for (const tab of tabs) expect(yield* userWith(url, tab.data.session!.access_token)).toEqual([200, undefined])
        expect(yield* userWith(url, data.session!.access_token)).toEqual([200, undefined])
      }))
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The OAuth state, used from another browser
// ---------------------------------------------------------------------------------------------------------------

const github = await startGitHubFake()
afterAll(() => github.close())

/** A GitHub account of its own, whose sign-in the fake answers from now on. */
const githubAccount = (email: string) => {
  const id = randomInt(1_000_000, 2_000_000_000)
  github.user = { ...octocat, id, login: `octo-${id}`, name: `Octo ${id}` }
  github.emails = [{ email, primary: true, verified: true, visibility: "public" }]
  return String(id)
}

// The test servers' API_EXTERNAL_URL: where GitHub sends browsers back, and where apps send them to sign in.
const API_EXTERNAL_URL = new URL(GITHUB_REDIRECT_URI).origin

/** A browser of its own, reaching the server under API_EXTERNAL_URL (it resolves that host to the test server). */
const browserAt = (url: string) => browser({ [API_EXTERNAL_URL]: url })

/** Starts a sign-in in `b` as signInWithOAuth would send it: the provider URL /authorize redirected to. */
const startSignIn = (b: ReturnType<typeof browser>) =>
  Effect.gen(function*() {
    const response = yield* call(() => b.request(`${API_EXTERNAL_URL}/authorize?provider=github&redirect_to=${encodeURIComponent(`${SITE_URL}/in`)}`))
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

/** Where GitHub would send a browser once its user consents: the callback URL with the code and the flow's state. */
const callbackUrlFor = (toGitHub: URL) =>
  `${GITHUB_REDIRECT_URI}?${new URLSearchParams({ code: GITHUB_CODE, state: toGitHub.searchParams.get("state")! })}`

/** What a browser is sent to by /callback, as the fragment's values. */
const openCallback = (b: ReturnType<typeof browser>, callbackUrl: string, init: RequestInit = {}) =>
  Effect.map(call(() => b.request(callbackUrl, init)), (response) => {
    expect(response.status).toBe(302)
    const location = new URL(response.headers.get("location")!)
    return { target: `${location.origin}${location.pathname}`, fragment: Object.fromEntries(new URLSearchParams(location.hash.slice(1))) }
  })

const REFUSED = {
  error: "invalid_request",
  error_code: "bad_oauth_state",
  error_description: "OAuth callback from a browser that did not start the sign-in: start it again in this browser",
  sb: ""
}

const userEmails = (url: string) =>
  Effect.map(raw(url, "/admin/users?per_page=1000", { bearer: adminJwt() }), (response) =>
    (response.json.users as Array<{ email: string }>).map((user) => user.email))

const OAUTH_ENV = { ...githubEnv(github), AUTH_MAILER_AUTOCONFIRM: "true", AUTH_SECURITY_MANUAL_LINKING_ENABLED: "true" }

describe("the OAuth state, used from another browser", () => {
  acceptance(OAUTH_ENV)((it) => {
    it.effect("sign-in CSRF: the attacker's callback URL opened in the victim's browser is refused and creates nobody; the attacker's own browser finishes it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const attackerEmail = uniqueEmail("attacker")
        githubAccount(attackerEmail)
        const attacker = browserAt(url)
        const planted = callbackUrlFor(yield* startSignIn(attacker))

        // The victim's browser: with no cookie at all, and with a binding of its own from a sign-in it started.
        const victim = browserAt(url)
        expect(yield* openCallback(victim, planted)).toEqual({ target: `${SITE_URL}/`, fragment: REFUSED })
        yield* startSignIn(victim)
        expect(victim.cookie(API_EXTERNAL_URL, "gatehouse-oauth")).toBeDefined()
        expect(victim.cookie(API_EXTERNAL_URL, "gatehouse-oauth")).not.toBe(attacker.cookie(API_EXTERNAL_URL, "gatehouse-oauth"))
        expect(yield* openCallback(victim, planted)).toEqual({ target: `${SITE_URL}/`, fragment: REFUSED })
        // As a form post (a form_post provider's way back), too.
        const posted = new URL(planted)
        expect(yield* openCallback(victim, `${API_EXTERNAL_URL}/auth/v1/callback`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: posted.searchParams.toString()
        })).toEqual({ target: `${SITE_URL}/`, fragment: REFUSED })
        expect(yield* userEmails(url)).not.toContain(attackerEmail)

        // The refusals spent nothing: the browser that started the flow finishes it.
        const own = yield* openCallback(attacker, planted)
        expect(own.target).toBe(`${SITE_URL}/in`)
        expect(own.fragment["access_token"]).toBeTruthy()
        expect(yield* userEmails(url)).toContain(attackerEmail)
      }))

    it.effect("two tabs of one browser: both sign-ins finish, the later-started one first", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const b = browserAt(url)
        const first = callbackUrlFor(yield* startSignIn(b))
        const second = callbackUrlFor(yield* startSignIn(b))
        githubAccount(uniqueEmail("tab-two"))
        expect((yield* openCallback(b, second)).fragment["access_token"]).toBeTruthy()
        githubAccount(uniqueEmail("tab-one"))
        expect((yield* openCallback(b, first)).fragment["access_token"]).toBeTruthy()
      }))

    it.effect("link CSRF: the attacker's link flow, finished in the victim's browser with the victim's GitHub, links nothing", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client: attackerApp } = authClient(url)
        const { data: signedUp } = yield* call(() => attackerApp.signUp({ email: uniqueEmail("link-attacker"), password: PASSWORD }))
        expect(signedUp.session).not.toBeNull()
        const link = yield* call(() => attackerApp.linkIdentity({ provider: "github", options: { redirectTo: `${SITE_URL}/linked` } }))
        expect(link.error).toBeNull()
        // The URL linkIdentity hands out is this server's, not GitHub's: whichever browser opens it first owns the flow.
        const toContinue = new URL(link.data.url!)
        expect(`${toContinue.origin}${toContinue.pathname}`).toBe(`${API_EXTERNAL_URL}/authorize/continue`)
        const attacker = browserAt(url)
        const toGitHub = new URL((yield* call(() => attacker.request(link.data.url!))).headers.get("location")!)
        expect(toGitHub.pathname).toBe("/login/oauth/authorize")

        // The victim follows the attacker's GitHub link and consents with the victim's own GitHub account.
        const victimGitHub = githubAccount(uniqueEmail("link-victim"))
        const victim = browserAt(url)
        expect(yield* openCallback(victim, callbackUrlFor(toGitHub))).toEqual({ target: `${SITE_URL}/`, fragment: REFUSED })
        // Nor can the victim's browser take the flow over at the continue URL: it is bound already.
        const reopened = yield* call(() => victim.request(link.data.url!))
        expect(new URLSearchParams(new URL(reopened.headers.get("location")!).hash.slice(1)).get("error_code")).toBe("bad_oauth_state")
        const { data: identities } = yield* call(() => attackerApp.getUserIdentities())
        expect(identities!.identities.map((identity) => identity.provider)).toEqual(["email"])
        expect(identities!.identities.map((identity) => identity.id)).not.toContain(victimGitHub)

        // The control: the attacker's own browser finishes the attacker's own flow.
        const own = yield* openCallback(attacker, callbackUrlFor(toGitHub))
        expect(own.target).toBe(`${SITE_URL}/linked`)
        const { data: after } = yield* call(() => attackerApp.getUserIdentities())
        expect(after!.identities.map((identity) => identity.provider)).toEqual(["email", "github"])
      }))

    it.effect("the binding cookie on http: HttpOnly, Path=/, SameSite=Lax, no Secure, and it lives as long as a flow", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const response = yield* call(() => fetch(`${url}/authorize?provider=github`, { redirect: "manual" }))
        const [cookie] = response.headers.getSetCookie()
        expect(cookie).toMatch(/^gatehouse-oauth=[A-Za-z0-9_-]{43}; /)
        const attributes = cookie!.split("; ").slice(1).sort()
        expect(attributes).toEqual(["HttpOnly", "Max-Age=300", "Path=/", "SameSite=Lax"])
        // The error redirect of a refused callback sets nothing.
        const refused = yield* call(() => fetch(`${url}/callback?code=x&state=${randomUUID()}`, { redirect: "manual" }))
        expect(refused.headers.getSetCookie()).toEqual([])
      }))
  })

  acceptance({ ...OAUTH_ENV, API_EXTERNAL_URL: "https://auth.example.com" })((it) => {
    it.effect("the binding cookie on https: __Host-, Secure and SameSite=None, so a form_post provider's cross-site POST carries it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const response = yield* call(() => fetch(`${url}/authorize?provider=github`, { redirect: "manual" }))
        const [cookie] = response.headers.getSetCookie()
        expect(cookie).toMatch(/^__Host-gatehouse-oauth=[A-Za-z0-9_-]{43}; /)
        expect(cookie!.split("; ").slice(1).sort()).toEqual(["HttpOnly", "Max-Age=300", "Path=/", "SameSite=None", "Secure"])
      }))
  })

  acceptance({ ...OAUTH_ENV, AUTH_SECURITY_OAUTH_BROWSER_BINDING_ENABLED: "false" })((it) => {
    it.effect("with SECURITY_OAUTH_BROWSER_BINDING_ENABLED=false, GoTrue's behaviour: no cookie, and any browser's callback is taken", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const starter = browserAt(url)
        const toGitHub = yield* startSignIn(starter)
        expect(starter.cookie(API_EXTERNAL_URL, "gatehouse-oauth")).toBeUndefined()
        githubAccount(uniqueEmail("unbound"))
        expect((yield* openCallback(browserAt(url), callbackUrlFor(toGitHub))).fragment["access_token"]).toBeTruthy()
        // linkIdentity hands out GitHub's URL itself, as GoTrue does.
        const { client } = authClient(url)
        yield* call(() => client.signUp({ email: uniqueEmail("unbound-linker"), password: PASSWORD }))
        const link = yield* call(() => client.linkIdentity({ provider: "github" }))
        expect(new URL(link.data.url!).pathname).toBe("/login/oauth/authorize")
      }))
  })
})

// ---------------------------------------------------------------------------------------------------------------
// CORS with credentials, from an origin not on the list
// ---------------------------------------------------------------------------------------------------------------

const ALLOWED = "https://app.example.com"
const PREVIEW = "https://pr-7.preview.example.com"

/** A preflight and an actual request from `origin`: what each says about CORS. */
const corsFor = (url: string, origin: string) =>
  Effect.gen(function*() {
    const preflight = yield* call(() =>
      fetch(`${url}/token?grant_type=password`, {
        method: "OPTIONS",
        headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type" }
      }))
    const actual = yield* call(() => fetch(`${url}/settings`, { headers: { Origin: origin } }))
    const cors = (response: Response) => ({
      origin: response.headers.get("access-control-allow-origin"),
      credentials: response.headers.get("access-control-allow-credentials")
    })
    return { preflight: cors(preflight), actual: cors(actual), status: actual.status }
  })

describe("CORS with credentials", () => {
  acceptance({ AUTH_CORS_ALLOWED_ORIGINS: `${ALLOWED}, https://*.preview.example.com` })((it) => {
    it.effect("with CORS_ALLOWED_ORIGINS, listed origins get Access-Control-Allow-Origin and credentials; any other gets none", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        for (const origin of [ALLOWED, PREVIEW]) {
          expect(yield* corsFor(url, origin)).toEqual({
            preflight: { origin, credentials: "true" },
            actual: { origin, credentials: "true" },
            status: 200
          })
        }
        for (const origin of ["https://evil.example", "https://app.example.com.evil.example", "http://app.example.com", "https://preview.example.com", "null"]) {
          // The answer itself still comes (CORS is the browser's to enforce); it carries nothing that lets a page read it.
          expect(yield* corsFor(url, origin), origin).toEqual({
            preflight: { origin: null, credentials: null },
            actual: { origin: null, credentials: null },
            status: 200
          })
        }
      }))
  })

  acceptance({})((it) => {
    it.effect("without CORS_ALLOWED_ORIGINS, every origin is echoed with credentials, as GoTrue does", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        expect(yield* corsFor(url, "https://evil.example")).toEqual({
          preflight: { origin: "https://evil.example", credentials: "true" },
          actual: { origin: "https://evil.example", credentials: "true" },
          status: 200
        })
      }))
  })
})
