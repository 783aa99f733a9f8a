/**
 * Sign-in with keycloak end to end, against a real OpenID provider (oidc-provider) laid out as a Keycloak realm:
 * auth-js signInWithOAuth → GET /authorize → the provider's login → GET /callback → a session in the fragment
 * (or `?code=` for PKCE), and getUser shows the keycloak identity. Also what must never yield a session: a
 * tampered, replayed or expired state, an ID token from the token endpoint that does not verify; and the allow-list
 * and provider checks of /authorize.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, codeIn, decodeJwt, mailTo, raw, versionedError } from "../acceptance/AcceptanceKit.js"
import { browser, type Hop } from "../support/Browser.js"
import { type IdpAccount, type IdTokenRewrite, startKeycloakIdp } from "../support/KeycloakIdp.js"

const SITE_URL = "http://localhost:3000"
// The callback URL registered at the provider: API_EXTERNAL_URL's, which the test browser resolves to the server.
const API_EXTERNAL_URL = "http://localhost:9999"
const REDIRECT_URI = `${API_EXTERNAL_URL}/callback`

const accounts: Record<string, IdpAccount> = {}
const idp = await startKeycloakIdp({ redirectUri: REDIRECT_URI, accounts })
afterAll(() => idp.close())

const account = (tag: string, overrides: Partial<IdpAccount> = {}): IdpAccount => {
  const sub = `${tag}-${randomUUID().slice(0, 8)}`
  const created: IdpAccount = {
    sub,
    email: `${sub}@example.com`,
    email_verified: true,
    name: `User ${tag}`,
    picture: `https://images.example.com/${sub}.png`,
    preferred_username: sub,
    ...overrides
  }
  accounts[sub] = created
  return created
}

const memoryStorage = () => {
  const items = new Map<string, string>()
  return {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key)
  }
}

const last = (hops: ReadonlyArray<Hop>): Hop => hops[hops.length - 1]!

/**
 * A URL of this server as an app in a browser reaches it: under API_EXTERNAL_URL, the host the provider sends the
 * browser back to, so that the browser-binding cookie /authorize sets rides along to /callback (the test browser
 * resolves that host to the server).
 */
const viaPublicUrl = (url: string): string => {
  const parsed = new URL(url)
  return `${API_EXTERNAL_URL}${parsed.pathname}${parsed.search}`
}

/**
 * From an /authorize URL to the provider's login page, then logged in as `sub`: the hops up to the callback, the
 * callback's own hop answered by Gatehouse, and so the URL the browser is finally sent to.
 */
const signInAt = (authorizeUrl: string, sub: string, server: string) =>
  call(async () => {
    const b = browser({ [API_EXTERNAL_URL]: server })
    const toLogin = await b.follow(viaPublicUrl(authorizeUrl), SITE_URL)
    const loginPage = last(toLogin)
    expect(loginPage.status).toBe(200)
    expect(loginPage.url).toContain("/realms/test/interaction/")
    const afterLogin = await b.follow(loginPage.url, REDIRECT_URI, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ login: sub }).toString()
    })
    const callbackUrl = last(afterLogin).location!
    expect(callbackUrl.startsWith(`${REDIRECT_URI}?`)).toBe(true)
    return { b, callbackUrl, authorizeHops: toLogin }
  })

/** The callback, once: Gatehouse's 302 and where it sends the browser. */
const callback = (b: ReturnType<typeof browser>, callbackUrl: string) =>
  call(async () => {
    const response = await b.request(callbackUrl)
    await response.arrayBuffer()
    return { status: response.status, location: new URL(response.headers.get("location")!) }
  })

const fragmentOf = (location: URL) => new URLSearchParams(location.hash.slice(1))

acceptance({
  AUTH_EXTERNAL_KEYCLOAK_ENABLED: "true",
  AUTH_EXTERNAL_KEYCLOAK_CLIENT_ID: idp.clientId,
  AUTH_EXTERNAL_KEYCLOAK_SECRET: idp.clientSecret,
  AUTH_EXTERNAL_KEYCLOAK_REDIRECT_URI: REDIRECT_URI,
  AUTH_EXTERNAL_KEYCLOAK_URL: idp.realmUrl,
  AUTH_EXTERNAL_GITHUB_ENABLED: "false"
})("keycloak sign-in", (it) => {
  it.effect("signInWithOAuth, the provider's login, /callback: a session in the fragment, and the keycloak identity", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const alice = account("alice")
      const { client } = authClient(url)
      const started = yield* call(() =>
        client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/welcome` } }))
      expect(started.error).toBeNull()
      const { b, callbackUrl, authorizeHops } = yield* signInAt(started.data.url!, alice.sub, url)

      // What Gatehouse asked the provider for: the code flow with PKCE, openid among the scopes, our client.
      const toProvider = new URL(authorizeHops[0]!.location!)
      expect(`${toProvider.origin}${toProvider.pathname}`).toBe(`${idp.realmUrl}/protocol/openid-connect/auth`)
      expect(toProvider.searchParams.get("client_id")).toBe(idp.clientId)
      expect(toProvider.searchParams.get("redirect_uri")).toBe(REDIRECT_URI)
      expect(toProvider.searchParams.get("response_type")).toBe("code")
      expect(toProvider.searchParams.get("scope")!.split(" ")).toEqual(["openid", "profile", "email"])
      expect(toProvider.searchParams.get("code_challenge_method")).toBe("S256")
      expect(toProvider.searchParams.get("state")).toMatch(/^[0-9a-f-]{36}$/)
      expect(authorizeHops[0]!.status).toBe(302)

      const { status, location } = yield* callback(b, callbackUrl)
      expect(status).toBe(302)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/welcome`)
      const fragment = fragmentOf(location)
      expect(fragment.get("token_type")).toBe("bearer")
      expect(fragment.get("provider")).toBe("keycloak")
      expect(fragment.get("provider_token")).toBeTruthy()
      expect(Number(fragment.get("expires_in"))).toBe(3600)
      expect(Number(fragment.get("expires_at"))).toBeGreaterThan(Date.now() / 1000)
      expect(fragment.get("refresh_token")).toBeTruthy()
      const accessToken = fragment.get("access_token")!
      expect(decodeJwt(accessToken).payload["amr"][0].method).toBe("oauth")

      const { data, error } = yield* call(() => client.getUser(accessToken))
      expect(error).toBeNull()
      expect(data.user?.email).toBe(alice.email)
      expect(data.user?.email_confirmed_at).toBeTruthy()
      expect(data.user?.app_metadata).toMatchObject({ provider: "keycloak", providers: ["keycloak"] })
      expect(data.user?.user_metadata).toMatchObject({ name: alice.name, email: alice.email, email_verified: true })
      const identity = data.user?.identities?.find((i) => i.provider === "keycloak")
      expect(identity?.id).toBe(alice.sub)
      expect(identity?.identity_data).toMatchObject({ sub: alice.sub, email: alice.email, iss: idp.realmUrl })

      // The refresh token works like any other.
      const refreshed = yield* call(() => authClient(url).client.refreshSession({ refresh_token: fragment.get("refresh_token")! }))
      expect(refreshed.error).toBeNull()
    }))

  it.effect("the token endpoint's ID token is verified: a forged, misdirected, expired, missing or another user's one ends in an error redirect", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const now = Math.floor(Date.now() / 1000)
      const OTHER_USER = "of another user than userinfo's"
      const cases: ReadonlyArray<readonly [string, IdTokenRewrite]> = [
        ["signed by a key the realm does not publish", (claims, sign) => sign(claims, "foreign")],
        ["issued to another client", (claims, sign) => sign({ ...claims, aud: "another-client" })],
        ["from another issuer", (claims, sign) => sign({ ...claims, iss: "http://127.0.0.1:1/realms/other" })],
        ["expired", (claims, sign) => sign({ ...claims, iat: now - 7200, exp: now - 3600 })],
        [OTHER_USER, (claims, sign) => sign({ ...claims, sub: "someone-else" })],
        ["missing", () => Promise.resolve(undefined)]
      ]
      for (const [why, rewrite] of cases) {
        const person = account("forged")
        const { client } = authClient(url)
        const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
        const { b, callbackUrl } = yield* signInAt(started.data.url!, person.sub, url)
        const before = idp.requests.length
        idp.rewriteIdToken(rewrite)
        const { location } = yield* callback(b, callbackUrl)
        const fragment = fragmentOf(location)
        expect([why, fragment.get("access_token"), fragment.get("error_description")])
          .toEqual([why, null, "Error getting user profile from external provider"])
        // userinfo is asked only once the ID token checks out; only then can the subjects be compared.
        const userinfoAsked = idp.requests.slice(before).some((request) => request.url.includes("/userinfo"))
        expect([why, userinfoAsked]).toEqual([why, why === OTHER_USER])
        const users = yield* raw(url, `/admin/users?per_page=1000`, { bearer: adminJwt() })
        expect(users.json.users.map((user: { email: string }) => user.email)).not.toContain(person.email)
      }
    }).pipe(Effect.ensuring(Effect.sync(() => idp.rewriteIdToken(null)))))

  it.effect("a second sign-in finds the same user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const bob = account("bob")
      const ids: Array<string> = []
      for (let i = 0; i < 2; i++) {
        const { client } = authClient(url)
        const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
        const { b, callbackUrl } = yield* signInAt(started.data.url!, bob.sub, url)
        const { location } = yield* callback(b, callbackUrl)
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/`)
        ids.push(decodeJwt(fragmentOf(location).get("access_token")!).payload["sub"])
      }
      expect(ids[0]).toBe(ids[1])
    }))

  it.effect("flowType pkce: the callback redirects with ?code=, and exchangeCodeForSession trades it for the session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const carol = account("carol")
      const { client } = authClient(url, { flowType: "pkce", persistSession: true, storage: memoryStorage() })
      const started = yield* call(() =>
        client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/done` } }))
      expect(new URL(started.data.url!).searchParams.get("code_challenge")).toBeTruthy()
      const { b, callbackUrl } = yield* signInAt(started.data.url!, carol.sub, url)
      const { status, location } = yield* callback(b, callbackUrl)
      expect(status).toBe(302)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/done`)
      expect(location.hash).toBe("")
      const code = location.searchParams.get("code")!
      expect(code).toMatch(/^[0-9a-f-]{36}$/)

      const exchanged = yield* call(() => client.exchangeCodeForSession(code))
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.session?.provider_token).toBeTruthy()
      expect(exchanged.data.user?.email).toBe(carol.email)
      expect(decodeJwt(exchanged.data.session!.access_token).payload["amr"][0].method).toBe("oauth")
      const user = yield* call(() => client.getUser())
      expect(user.data.user?.identities?.map((i) => i.provider)).toEqual(["keycloak"])
      // The code is good once.
      const again = yield* call(() => client.exchangeCodeForSession(code))
      expect(again.error).not.toBeNull()
    }))

  it.effect("a tampered state is refused: the browser goes to SITE_URL with bad_oauth_state, and no session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const dave = account("dave")
      const { client } = authClient(url)
      const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
      const { b, callbackUrl } = yield* signInAt(started.data.url!, dave.sub, url)
      for (const state of [randomUUID(), "not-a-uuid", ""]) {
        const tampered = new URL(callbackUrl)
        tampered.searchParams.set("state", state)
        const { status, location } = yield* callback(b, tampered.href)
        expect(status).toBe(302)
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/`)
        const fragment = fragmentOf(location)
        expect(fragment.get("access_token")).toBeNull()
        expect(fragment.get("error")).toBe("invalid_request")
        expect(fragment.get("error_code")).toBe(state === "" ? "bad_oauth_callback" : "bad_oauth_state")
      }
    }))

  it.effect("a replayed callback (the same state and code again) is refused", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const erin = account("erin")
      const { client } = authClient(url)
      const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
      const { b, callbackUrl } = yield* signInAt(started.data.url!, erin.sub, url)
      const first = yield* callback(b, callbackUrl)
      expect(fragmentOf(first.location).get("access_token")).toBeTruthy()
      const replay = yield* callback(b, callbackUrl)
      expect(fragmentOf(replay.location).get("access_token")).toBeNull()
      expect(fragmentOf(replay.location).get("error_code")).toBe("bad_oauth_state")
    }))

  it.effect("a flow state older than 300 seconds is flow_state_expired, at the app's redirect_to", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const frank = account("frank")
      const { client } = authClient(url)
      const started = yield* call(() =>
        client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/late` } }))
      const { b, callbackUrl } = yield* signInAt(started.data.url!, frank.sub, url)
      const state = new URL(callbackUrl).searchParams.get("state")!
      yield* sql`UPDATE auth.flow_state SET created_at = created_at - interval '301 seconds' WHERE id = ${state}`.pipe(Effect.orDie)
      const { location } = yield* callback(b, callbackUrl)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/late`)
      const fragment = fragmentOf(location)
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_code")).toBe("flow_state_expired")
    }))

  it.effect("an error from the provider (the user said no) comes back as the provider's error", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const b = browser({ [API_EXTERNAL_URL]: url })
      const { client } = authClient(url)
      const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
      const hops = yield* call(() => b.follow(viaPublicUrl(started.data.url!), SITE_URL))
      const loginPage = last(hops)
      const denied = yield* call(() =>
        b.follow(loginPage.url, REDIRECT_URI, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "login=nobody"
        }))
      const { location } = yield* callback(b, last(denied).location!)
      const fragment = fragmentOf(location)
      expect(fragment.get("error")).toBe("access_denied")
      expect(fragment.get("error_description")).toBe("unknown account")
      expect(fragment.get("access_token")).toBeNull()
    }))

  it.effect("redirect_to off the allow-list falls back to SITE_URL", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const gina = account("gina")
      const { client } = authClient(url)
      const started = yield* call(() =>
        client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true, redirectTo: "https://evil.example.com/steal" } }))
      const { b, callbackUrl } = yield* signInAt(started.data.url!, gina.sub, url)
      const { location } = yield* callback(b, callbackUrl)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/`)
      expect(fragmentOf(location).get("access_token")).toBeTruthy()
    }))

  it.effect("an unverified provider email is not linked to the existing user who has that address", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = `owner-${randomUUID().slice(0, 8)}@example.com`
      const created = yield* raw(url, "/admin/users", {
        bearer: adminJwt(),
        body: { email, password: "Corr3ct-Horse-Battery", email_confirm: true }
      })
      expect(created.status).toBe(200)
      const owner = created.json.id as string
      const impostor = account("impostor", { email, email_verified: false })
      const { client } = authClient(url)
      const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
      const { b, callbackUrl } = yield* signInAt(started.data.url!, impostor.sub, url)
      const { location } = yield* callback(b, callbackUrl)
      // A new user without the taken address, who must verify an email before signing in (GoTrue's 422).
      const fragment = fragmentOf(location)
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_code")).toBe("provider_email_needs_verification")
      const after = yield* raw(url, `/admin/users/${owner}`, { bearer: adminJwt() })
      expect(after.json.identities.map((i: { provider: string }) => i.provider)).toEqual(["email"])
    }))

  it.effect("a new account with an unverified email is mailed a confirmation; once confirmed, the provider signs it in", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = `unproven-${randomUUID().slice(0, 8)}@example.com`
      const person = account("unproven", { email, email_verified: false })
      const signIn = Effect.gen(function*() {
        const { client } = authClient(url)
        const started = yield* call(() => client.signInWithOAuth({ provider: "keycloak", options: { skipBrowserRedirect: true } }))
        const { b, callbackUrl } = yield* signInAt(started.data.url!, person.sub, url)
        return fragmentOf((yield* callback(b, callbackUrl)).location)
      })
      const refused = yield* signIn
      expect([refused.get("access_token"), refused.get("error_code")]).toEqual([null, "provider_email_needs_verification"])
      // As GoTrue: the kept user gets the sign-up confirmation, and its code proves the address.
      const mails = yield* mailTo(email)
      expect(mails.map((mail) => mail.subject)).toEqual(["Confirm Your Signup"])
      const confirmed = yield* call(() => authClient(url).client.verifyOtp({ email, token: codeIn(mails[0]!), type: "signup" }))
      expect(confirmed.error).toBeNull()
      const admitted = yield* signIn
      expect(admitted.get("access_token")).toBeTruthy()
      expect(decodeJwt(admitted.get("access_token")!).payload["email"]).toBe(email)
    }))

  it.effect("/authorize refuses an unknown and a disabled provider with GoTrue's 400s", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const unknown = yield* raw(url, "/authorize?provider=myspace", { apiVersion: true })
      expect(unknown.status).toBe(400)
      expect(unknown.json).toEqual(versionedError("validation_failed", "Unsupported provider: Provider myspace could not be found"))
      const disabled = yield* raw(url, "/authorize?provider=github", { apiVersion: true })
      expect(disabled.status).toBe(400)
      expect(disabled.json).toEqual(versionedError("validation_failed", "Unsupported provider: provider is not enabled"))
      const badPkce = yield* raw(url, "/authorize?provider=keycloak&code_challenge=short&code_challenge_method=s256", { apiVersion: true })
      expect(badPkce.status).toBe(400)
      expect(badPkce.json.code).toBe("validation_failed")
    }))
})
