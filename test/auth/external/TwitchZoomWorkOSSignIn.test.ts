/**
 * Sign-in with twitch, zoom and workos against one local server standing in for all three (each provider's
 * EXTERNAL_<P>_URL points at it; their paths do not overlap), answering in each provider's real response shapes.
 * Each case checks the authorize URL and every request the provider would receive: method, path, headers, form body.
 */
import { createServer, type IncomingMessage } from "node:http"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, uniqueEmail } from "../acceptance/AcceptanceKit.js"
import { browser } from "../support/Browser.js"

const SITE_URL = "http://localhost:3000"
// The user's browser: it keeps the cookie /authorize sets (the OAuth browser binding) and brings it to /callback.
const b = browser()
const REDIRECT_URI = "http://localhost:9999/callback"
const CODE = "c0de-from-provider"

interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

const seen: Array<Seen> = []
const emails = { twitch: "", zoom: "", workos: "" }

const twitchUser = () => ({
  data: [{
    id: "141981764",
    login: "twitchdev",
    display_name: "TwitchDev",
    type: "",
    broadcaster_type: "partner",
    description: "Supporting third-party developers building Twitch integrations.",
    profile_image_url: "https://static-cdn.jtvnw.net/jtv_user_pictures/8a6381c7-d0c0-4576-b179-38bd5ce1d6af-profile_image-300x300.png",
    offline_image_url: "https://static-cdn.jtvnw.net/jtv_user_pictures/3f13ab61-ec78-4fe6-8481-8682cb3b0ac2-channel_offline_image-1920x1080.png",
    view_count: 5980557,
    email: emails.twitch,
    created_at: "2016-12-14T20:32:28Z"
  }]
})

const zoomUser = () => ({
  id: "KDcuGIm1QgePTO8WbOqwIQ",
  first_name: "Jill",
  last_name: "Chill",
  display_name: "Jill Chill",
  email: emails.zoom,
  type: 2,
  role_name: "Owner",
  pmi: 3542471135,
  use_pmi: false,
  personal_meeting_url: "https://zoom.us/j/3542471135",
  timezone: "Asia/Shanghai",
  verified: 1,
  dept: "",
  created_at: "2019-06-01T07:58:03Z",
  last_login_time: "2019-06-01T07:58:03Z",
  pic_url: "https://example.com/photo.jpg",
  language: "en-US",
  phone_number: "",
  status: "active",
  account_id: "q6gBJVO5TzexKYTb_I2rpg",
  account_number: 10009239,
  cluster: "us04",
  user_created_at: "2019-06-01T07:58:03Z"
})

const workosProfile = () => ({
  object: "profile",
  id: "prof_01DMC79VCBZ0NY2099737PSVF1",
  connection_id: "conn_01E4ZCR3C56J083X43JQXF3JK5",
  connection_type: "OktaSAML",
  organization_id: "org_01EHWNCE74X7JSDV0X3SZ3KJNY",
  email: emails.workos,
  first_name: "Todd",
  last_name: "Rundgren",
  idp_id: "00u1a0ufowBJlzPlk357",
  role: { slug: "admin" },
  raw_attributes: { department: "Engineering" }
})

const tokenAnswers: Record<string, () => Record<string, unknown>> = {
  "/oauth2/token": () => ({
    access_token: "twitch-access-token",
    expires_in: 14124,
    refresh_token: "twitch-refresh-token",
    scope: ["user:read:email"],
    token_type: "bearer"
  }),
  "/oauth/token": () => ({
    access_token: "zoom-access-token",
    token_type: "bearer",
    refresh_token: "zoom-refresh-token",
    expires_in: 3599,
    scope: "user:read:user"
  }),
  "/sso/token": () => ({ access_token: "workos-access-token", profile: workosProfile() })
}

const provider = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const path = req.url ?? "/"
    const body = Buffer.concat(chunks).toString("utf8")
    seen.push({ method: req.method ?? "GET", path, headers: req.headers, body })
    res.setHeader("content-type", "application/json; charset=utf-8")
    const token = tokenAnswers[path]
    if (token !== undefined) {
      if (new URLSearchParams(body).get("code") === CODE) {
        res.end(JSON.stringify(token()))
      } else {
        res.statusCode = 400
        res.end(JSON.stringify({ error: "invalid_grant", error_description: "The code has expired or is invalid." }))
      }
    } else if (path === "/helix/users") {
      res.end(JSON.stringify(twitchUser()))
    } else if (path === "/v2/users/me") {
      res.end(JSON.stringify(zoomUser()))
    } else {
      res.statusCode = 404
      res.end(JSON.stringify({ message: "Not Found" }))
    }
  })
})
await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve))
const address = provider.address()
const PROVIDER_URL = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
afterAll(() => new Promise<void>((resolve) => provider.close(() => resolve())))

const envFor = (name: string) => ({
  [`AUTH_EXTERNAL_${name.toUpperCase()}_ENABLED`]: "true",
  [`AUTH_EXTERNAL_${name.toUpperCase()}_CLIENT_ID`]: `${name}-client-id`,
  [`AUTH_EXTERNAL_${name.toUpperCase()}_SECRET`]: `${name}-client-secret`,
  [`AUTH_EXTERNAL_${name.toUpperCase()}_REDIRECT_URI`]: REDIRECT_URI,
  [`AUTH_EXTERNAL_${name.toUpperCase()}_URL`]: PROVIDER_URL
})

const authorize = (url: string, name: "twitch" | "zoom" | "workos", queryParams: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const started = yield* call(() =>
      client.signInWithOAuth({ provider: name, options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/home`, queryParams } }))
    const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

const callback = (url: string, state: string, code = CODE) =>
  Effect.map(call(() => b.request(`${url}/callback?${new URLSearchParams({ code, state })}`, { redirect: "manual" })), (response) => {
    expect(response.status).toBe(302)
    const location = new URL(response.headers.get("location")!)
    return { location, fragment: new URLSearchParams(location.hash.slice(1)) }
  })

const basic = (name: string) => `Basic ${Buffer.from(`${name}-client-id:${name}-client-secret`).toString("base64")}`

acceptance({ ...envFor("twitch"), ...envFor("zoom"), ...envFor("workos") })("twitch, zoom and workos sign-in", (it) => {
  it.effect("twitch: user:read:email, credentials in the form body, Helix with Client-Id, a verified address", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      emails.twitch = uniqueEmail("twitch")
      seen.length = 0
      const toTwitch = yield* authorize(url, "twitch")
      expect(`${toTwitch.origin}${toTwitch.pathname}`).toBe(`${PROVIDER_URL}/oauth2/authorize`)
      expect(Object.fromEntries(toTwitch.searchParams)).toEqual({
        response_type: "code",
        client_id: "twitch-client-id",
        redirect_uri: REDIRECT_URI,
        state: expect.stringMatching(/^[0-9a-f-]{36}$/),
        scope: "user:read:email"
      })

      const { location, fragment } = yield* callback(url, toTwitch.searchParams.get("state")!)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
      expect(fragment.get("provider")).toBe("twitch")
      expect(fragment.get("provider_token")).toBe("twitch-access-token")
      expect(fragment.get("provider_refresh_token")).toBe("twitch-refresh-token")

      const [token, users, ...rest] = seen
      expect(rest).toEqual([])
      expect(token!.method).toBe("POST")
      expect(token!.path).toBe("/oauth2/token")
      expect(token!.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(token!.headers["authorization"]).toBeUndefined()
      expect(Object.fromEntries(new URLSearchParams(token!.body))).toEqual({
        grant_type: "authorization_code",
        code: CODE,
        redirect_uri: REDIRECT_URI,
        client_id: "twitch-client-id",
        client_secret: "twitch-client-secret"
      })
      expect(`${users!.method} ${users!.path}`).toBe("GET /helix/users")
      expect(users!.headers["authorization"]).toBe("Bearer twitch-access-token")
      expect(users!.headers["client-id"]).toBe("twitch-client-id")

      const { data } = yield* call(() => authClient(url).client.getUser(fragment.get("access_token")!))
      expect(data.user?.email).toBe(emails.twitch)
      expect(data.user?.email_confirmed_at).toBeTruthy()
      expect(data.user?.user_metadata).toMatchObject({ full_name: "TwitchDev", preferred_username: "twitchdev", email_verified: true })
      expect(data.user?.identities?.find((i) => i.provider === "twitch")?.id).toBe("141981764")
    }))

  it.effect("zoom: PKCE, Basic auth, /v2/users/me with verified 1", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      emails.zoom = uniqueEmail("zoom")
      seen.length = 0
      const toZoom = yield* authorize(url, "zoom")
      expect(`${toZoom.origin}${toZoom.pathname}`).toBe(`${PROVIDER_URL}/oauth/authorize`)
      expect(Object.fromEntries(toZoom.searchParams)).toEqual({
        response_type: "code",
        client_id: "zoom-client-id",
        redirect_uri: REDIRECT_URI,
        state: expect.stringMatching(/^[0-9a-f-]{36}$/),
        code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        code_challenge_method: "S256"
      })

      const { fragment } = yield* callback(url, toZoom.searchParams.get("state")!)
      expect(fragment.get("provider")).toBe("zoom")
      expect(fragment.get("provider_token")).toBe("zoom-access-token")

      const [token, me, ...rest] = seen
      expect(rest).toEqual([])
      expect(`${token!.method} ${token!.path}`).toBe("POST /oauth/token")
      expect(token!.headers["authorization"]).toBe(basic("zoom"))
      expect(Object.fromEntries(new URLSearchParams(token!.body))).toEqual({
        grant_type: "authorization_code",
        code: CODE,
        redirect_uri: REDIRECT_URI,
        code_verifier: expect.stringMatching(/^[A-Za-z0-9_-]{43,128}$/)
      })
      expect(`${me!.method} ${me!.path}`).toBe("GET /v2/users/me")
      expect(me!.headers["authorization"]).toBe("Bearer zoom-access-token")

      const { data } = yield* call(() => authClient(url).client.getUser(fragment.get("access_token")!))
      expect(data.user?.email).toBe(emails.zoom)
      expect(data.user?.email_confirmed_at).toBeTruthy()
      expect(data.user?.user_metadata).toMatchObject({ full_name: "Jill Chill", avatar_url: "https://example.com/photo.jpg" })
      expect(data.user?.identities?.find((i) => i.provider === "zoom")?.id).toBe("KDcuGIm1QgePTO8WbOqwIQ")
    }))

  it.effect("a code the provider refuses ends in an error redirect, never a session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const toZoom = yield* authorize(url, "zoom")
      const { fragment } = yield* callback(url, toZoom.searchParams.get("state")!, "wrong")
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_description")).toBe("Unable to exchange external code")
    }))

  it.effect("workos: the connection parameters go on, the profile comes from the token answer, its address is unverified", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      emails.workos = uniqueEmail("workos")
      seen.length = 0
      const toWorkOS = yield* authorize(url, "workos", { organization: "org_01EHWNCE74X7JSDV0X3SZ3KJNY", workos_provider: "GoogleOAuth" })
      expect(`${toWorkOS.origin}${toWorkOS.pathname}`).toBe(`${PROVIDER_URL}/sso/authorize`)
      expect(Object.fromEntries(toWorkOS.searchParams)).toEqual({
        response_type: "code",
        client_id: "workos-client-id",
        redirect_uri: REDIRECT_URI,
        state: expect.stringMatching(/^[0-9a-f-]{36}$/),
        organization: "org_01EHWNCE74X7JSDV0X3SZ3KJNY",
        provider: "GoogleOAuth"
      })

      const { fragment } = yield* callback(url, toWorkOS.searchParams.get("state")!)
      const [token, ...rest] = seen
      expect(rest).toEqual([])
      expect(`${token!.method} ${token!.path}`).toBe("POST /sso/token")
      expect(token!.headers["authorization"]).toBeUndefined()
      expect(Object.fromEntries(new URLSearchParams(token!.body))).toEqual({
        grant_type: "authorization_code",
        code: CODE,
        redirect_uri: REDIRECT_URI,
        client_id: "workos-client-id",
        client_secret: "workos-client-secret"
      })
      // WorkOS does not vouch for the address: the new account waits for the address to be confirmed, as GoTrue's.
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_code")).toBe("provider_email_needs_verification")
    }))
})
