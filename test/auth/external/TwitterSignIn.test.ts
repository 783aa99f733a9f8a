/**
 * Sign-in with twitter (OAuth 1.0a) against a local server in Twitter's place (EXTERNAL_TWITTER_URL), answering in
 * Twitter's real shapes (form-encoded tokens, the v1.1 user object). The server checks every request's HMAC-SHA1
 * signature itself, from RFC 5849 rather than the library Gatehouse signs with, and the test checks which token
 * signed which request.
 */
import { createHmac } from "node:crypto"
import { createServer } from "node:http"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, uniqueEmail } from "../acceptance/AcceptanceKit.js"
import { browser } from "../support/Browser.js"

const SITE_URL = "http://localhost:3000"
// The user's browser: it keeps the cookie /authorize sets (the OAuth browser binding) and brings it to /callback.
const b = browser()
const REDIRECT_URI = "http://localhost:9999/callback"
const CONSUMER_KEY = "xvz1evFS4wEEPTGEFPHBog"
const CONSUMER_SECRET = "kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw"
const ACCESS_TOKEN = "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb"
const ACCESS_SECRET = "LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE"

interface Signed {
  readonly method: string
  readonly path: string
  /** The Authorization header's oauth_* parameters. */
  readonly oauth: Readonly<Record<string, string>>
  readonly signatureValid: boolean
}

const seen: Array<Signed> = []
const requestTokens = new Map<string, string>()
let issued = 0
let email = ""

const enc = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** RFC 5849 §3.4: the signature over method, base URL and every parameter, keyed by the consumer and token secrets. */
const verify = (method: string, url: URL, oauth: Record<string, string>, tokenSecret: string): boolean => {
  const params = [...Object.entries(oauth).filter(([key]) => key !== "oauth_signature"), ...url.searchParams]
    .map(([k, v]) => [enc(k), enc(v)] as const)
    .sort(([a, x], [b, y]) => a < b ? -1 : a > b ? 1 : x < y ? -1 : 1)
    .map(([k, v]) => `${k}=${v}`).join("&")
  const base = `${method}&${enc(`${url.origin}${url.pathname}`)}&${enc(params)}`
  const expected = createHmac("sha1", `${enc(CONSUMER_SECRET)}&${enc(tokenSecret)}`).update(base).digest("base64")
  return expected === oauth["oauth_signature"]
}

const twitter = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host}`)
    const header = req.headers["authorization"] ?? ""
    const oauth = Object.fromEntries([...header.replace(/^OAuth /, "").matchAll(/([a-z_]+)="([^"]*)"/g)].map(([, k, v]) => [k!, decodeURIComponent(v!)]))
    const token = oauth["oauth_token"]
    const tokenSecret = token === undefined ? "" : token === ACCESS_TOKEN ? ACCESS_SECRET : requestTokens.get(token) ?? "?"
    const signatureValid = oauth["oauth_consumer_key"] === CONSUMER_KEY && oauth["oauth_signature_method"] === "HMAC-SHA1" &&
      verify(req.method ?? "GET", url, oauth, tokenSecret)
    seen.push({ method: req.method ?? "GET", path: `${url.pathname}${url.search}`, oauth, signatureValid })
    if (!signatureValid) {
      res.statusCode = 401
      res.setHeader("content-type", "application/json")
      return res.end(JSON.stringify({ errors: [{ code: 32, message: "Could not authenticate you." }] }))
    }
    if (url.pathname === "/oauth/request_token") {
      issued += 1
      const requestToken = `NPcudxy0yU5T3tBzho7iCotZ3cnetKwcTIRlX0iwRl${issued}`
      requestTokens.set(requestToken, `veNRnAWe6inFuo8o2u8SLLZLjolYDmDP7SzL0YfYI${issued}`)
      res.setHeader("content-type", "text/html; charset=utf-8")
      return res.end(`oauth_token=${requestToken}&oauth_token_secret=${requestTokens.get(requestToken)}&oauth_callback_confirmed=true`)
    }
    if (url.pathname === "/oauth/access_token" && token !== undefined && requestTokens.has(token) && oauth["oauth_verifier"] === `verifier-${token}`) {
      res.setHeader("content-type", "text/html; charset=utf-8")
      return res.end(`oauth_token=${ACCESS_TOKEN}&oauth_token_secret=${ACCESS_SECRET}&user_id=370773112&screen_name=TwitterDev`)
    }
    if (url.pathname === "/1.1/account/verify_credentials.json" && token === ACCESS_TOKEN) {
      res.setHeader("content-type", "application/json;charset=utf-8")
      return res.end(JSON.stringify({
        id: 2244994945,
        id_str: "2244994945",
        name: "Twitter Dev",
        screen_name: "TwitterDev",
        location: "Internet",
        description: "The voice of the X Dev team",
        verified: true,
        followers_count: 513958,
        profile_image_url_https: "https://pbs.twimg.com/profile_images/1445764922474827784/W2zEPN7U_normal.jpg",
        email
      }))
    }
    res.statusCode = 401
    res.setHeader("content-type", "application/json")
    res.end(JSON.stringify({ errors: [{ code: 89, message: "Invalid or expired token." }] }))
  })
})
await new Promise<void>((resolve) => twitter.listen(0, "127.0.0.1", resolve))
const address = twitter.address()
const TWITTER_URL = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
afterAll(() => new Promise<void>((resolve) => twitter.close(() => resolve())))

const authorize = (url: string, queryParams: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const started = yield* call(() =>
      client.signInWithOAuth({ provider: "twitter", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/home`, queryParams } }))
    const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

const callback = (url: string, query: Record<string, string>) =>
  Effect.map(call(() => b.request(`${url}/callback?${new URLSearchParams(query)}`, { redirect: "manual" })), (response) => {
    expect(response.status).toBe(302)
    const location = new URL(response.headers.get("location")!)
    return { location, fragment: new URLSearchParams(location.hash.slice(1)) }
  })

acceptance({
  AUTH_EXTERNAL_TWITTER_ENABLED: "true",
  AUTH_EXTERNAL_TWITTER_CLIENT_ID: CONSUMER_KEY,
  AUTH_EXTERNAL_TWITTER_SECRET: CONSUMER_SECRET,
  AUTH_EXTERNAL_TWITTER_REDIRECT_URI: REDIRECT_URI,
  AUTH_EXTERNAL_TWITTER_URL: TWITTER_URL
})("twitter sign-in (OAuth 1.0a)", (it) => {
  it.effect("request token, authenticate page, oauth_token and oauth_verifier back, access token, verify_credentials, session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      email = uniqueEmail("twitter")
      seen.length = 0
      const toTwitter = yield* authorize(url, { force_login: "true" })
      const [requestToken] = seen
      expect(requestToken).toMatchObject({ method: "POST", path: "/oauth/request_token", signatureValid: true })
      expect(requestToken!.oauth["oauth_callback"]).toBe(REDIRECT_URI)
      expect(requestToken!.oauth["oauth_token"]).toBeUndefined()
      expect(`${toTwitter.origin}${toTwitter.pathname}`).toBe(`${TWITTER_URL}/oauth/authenticate`)
      const token = toTwitter.searchParams.get("oauth_token")!
      expect(Object.fromEntries(toTwitter.searchParams)).toEqual({ oauth_token: token, force_login: "true" })
      expect(requestTokens.has(token)).toBe(true)

      const { location, fragment } = yield* callback(url, { oauth_token: token, oauth_verifier: `verifier-${token}` })
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
      expect(fragment.get("provider")).toBe("twitter")
      expect(fragment.get("provider_token")).toBe(ACCESS_TOKEN)
      expect(fragment.get("provider_refresh_token")).toBe("")

      const [, accessToken, credentials, ...rest] = seen
      expect(rest).toEqual([])
      expect(accessToken).toMatchObject({ method: "POST", path: "/oauth/access_token", signatureValid: true })
      expect(accessToken!.oauth).toMatchObject({ oauth_token: token, oauth_verifier: `verifier-${token}` })
      expect(credentials).toMatchObject({ method: "GET", path: "/1.1/account/verify_credentials.json?include_email=true", signatureValid: true })
      expect(credentials!.oauth["oauth_token"]).toBe(ACCESS_TOKEN)

      const { data } = yield* call(() => authClient(url).client.getUser(fragment.get("access_token")!))
      expect(data.user?.email).toBe(email)
      expect(data.user?.email_confirmed_at).toBeTruthy()
      expect(data.user?.user_metadata).toMatchObject({ full_name: "Twitter Dev", user_name: "TwitterDev", email_verified: true })
      expect(data.user?.identities?.find((i) => i.provider === "twitter")?.id).toBe("2244994945")
    }))

  it.effect("a request token is spent by its callback: a replay, or one Twitter never issued, gets bad_oauth_state", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      email = uniqueEmail("twitter-replay")
      const token = (yield* authorize(url)).searchParams.get("oauth_token")!
      const first = yield* callback(url, { oauth_token: token, oauth_verifier: `verifier-${token}` })
      expect(first.fragment.get("access_token")).toBeTruthy()
      for (const oauthToken of [token, "never-issued"]) {
        const { fragment, location } = yield* callback(url, { oauth_token: oauthToken, oauth_verifier: `verifier-${token}` })
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/`)
        expect(fragment.get("access_token")).toBeNull()
        expect(fragment.get("error_code")).toBe("bad_oauth_state")
      }
    }))

  it.effect("a sign-in the user refused (denied=<request token>) ends at redirect_to with access_denied, and spends the flow", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const token = (yield* authorize(url)).searchParams.get("oauth_token")!
      const { fragment, location } = yield* callback(url, { denied: token })
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
      expect(fragment.get("error")).toBe("access_denied")
      expect(fragment.get("access_token")).toBeNull()
      const again = yield* callback(url, { oauth_token: token, oauth_verifier: `verifier-${token}` })
      expect(again.fragment.get("error_code")).toBe("bad_oauth_state")
    }))

  it.effect("a verifier Twitter refuses ends in an error redirect, never a session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const token = (yield* authorize(url)).searchParams.get("oauth_token")!
      const { fragment } = yield* callback(url, { oauth_token: token, oauth_verifier: "forged" })
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_description")).toBe("Unable to exchange external code")
    }))
})
