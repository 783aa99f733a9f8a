/**
 * Sign-in with google, azure, apple, gitlab and bitbucket against one local server standing in for all of them
 * (each provider's EXTERNAL_<P>_URL points at its own prefix), answering in each provider's real response shapes.
 * One table row per provider: the authorize URL, then every request the provider would receive (method, path,
 * headers, form body), then the session and the identity auth-js sees.
 */
import { createServer, type IncomingMessage } from "node:http"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, decodeJwt } from "../acceptance/AcceptanceKit.js"
import { browser } from "../support/Browser.js"

const SITE_URL = "http://localhost:3000"
// The user's browser: it keeps the cookie /authorize sets (the OAuth browser binding) and brings it to /callback.
const b = browser()
const REDIRECT_URI = "http://localhost:9999/callback"

interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

interface Answer {
  readonly status?: number
  readonly json: unknown
}

const seen: Array<Seen> = []
/** What the fake answers, by path (without the query); filled in by the rows below. */
const routes = new Map<string, (request: Seen) => Answer>()

const fake = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const request = { method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") }
    const route = routes.get(request.path.split("?")[0]!)
    if (!request.path.endsWith("/keys")) seen.push(request)
    const answer = route === undefined ? { status: 404, json: { error: "not_found" } } : route(request)
    res.statusCode = answer.status ?? 200
    res.setHeader("content-type", "application/json; charset=utf-8")
    res.end(JSON.stringify(answer.json))
  })
})
await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve))
const address = fake.address()
const FAKE = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
afterAll(() => new Promise<void>((resolve) => fake.close(() => resolve())))

/** The providers' signing key, published at each one's key set URL. */
const { privateKey, publicKey } = await generateKeyPair("RS256")
const JWKS = { keys: [{ ...(await exportJWK(publicKey)), kid: "test-key-1", alg: "RS256", use: "sig" }] }
const otherKey = (await generateKeyPair("RS256")).privateKey
const nowSeconds = Math.floor(Date.now() / 1000)
const idToken = (claims: Record<string, unknown>, key = privateKey) =>
  new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "test-key-1", typ: "JWT" }).sign(key)

const form = (request: Seen) => Object.fromEntries(new URLSearchParams(request.body))
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`

interface Row {
  readonly provider: string
  readonly clientId: string
  readonly secret: string
  readonly url: string
  /** Where /authorize sends the browser, and the query it carries (state and PKCE checked by the runner). */
  readonly authorization: string
  readonly authorizeQuery: Record<string, unknown>
  readonly pkce: boolean
  /** /callback as the provider calls it: a redirect (GET) or Apple's form_post. */
  readonly callbackMethod: "GET" | "POST"
  readonly code: string
  readonly tokenPath: string
  readonly tokenAnswer: () => unknown
  /** For providers whose profile is the ID token: the key set's path, and a token answer whose id_token must be refused. */
  readonly keys?: { readonly path: string; readonly forged: () => unknown }
  /** How the client proves itself at the token endpoint. */
  readonly credentials: "basic" | "body"
  readonly accessToken: string
  /** The API requests after the exchange, in any order, each with the user's bearer token. */
  readonly api: ReadonlyArray<{ readonly path: string; readonly json: unknown; readonly headers?: Record<string, string> }>
  readonly providerRefreshToken: string
  readonly email: string
  readonly confirmed: boolean
  readonly identityId: string
  readonly metadata: Record<string, unknown>
}

const GOOGLE_USER = {
  sub: "110169484474386276334",
  name: "Ada Lovelace",
  given_name: "Ada",
  family_name: "Lovelace",
  picture: "https://lh3.googleusercontent.com/a/ACg8ocK=s96-c",
  email: "ada@analytical.example.com",
  email_verified: true,
  hd: "analytical.example.com"
}

const AZURE_TENANT = "9188040d-6c67-4c5b-b112-36a304b66dad"
const AZURE_CLIENT_ID = "6731de76-14a6-49ae-97bc-6eba6914391e"
const AZURE_CLAIMS = {
  ver: "2.0",
  iss: `https://login.microsoftonline.com/${AZURE_TENANT}/v2.0`,
  sub: "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
  aud: AZURE_CLIENT_ID,
  exp: nowSeconds + 3600,
  iat: nowSeconds,
  nbf: nowSeconds,
  name: "Grace Hopper",
  preferred_username: "grace@contoso.example.com",
  oid: "00000000-0000-0000-66f3-3332eca7ea81",
  email: "grace@contoso.example.com",
  xms_edov: true,
  tid: AZURE_TENANT,
  uti: "AbCdEf0123",
  rh: "0.AQ4AFg"
}
const AZURE_ID_TOKEN = await idToken(AZURE_CLAIMS)
// Right in every way but the signer: the provider's key set does not hold this key.
const AZURE_FORGED_ID_TOKEN = await idToken(AZURE_CLAIMS, otherKey)
const azureTokenAnswer = (id_token: string) => ({
  token_type: "Bearer",
  scope: "openid profile email",
  expires_in: 4523,
  ext_expires_in: 4523,
  access_token: "eyJ0eXAiOiJKV1QiLCJub25jZSI6.azure-access",
  id_token
})

const APPLE_CLIENT_ID = "com.example.web.signin"
// Apple's client secret is a JWT the operator signs with the team's key; to Gatehouse it is an opaque string.
const APPLE_SECRET = "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIn0.c2lnbmF0dXJl"
const APPLE_CLAIMS = {
  iss: "https://appleid.apple.com",
  aud: APPLE_CLIENT_ID,
  exp: nowSeconds + 600,
  iat: nowSeconds,
  sub: "001234.5f7a0c9e8d6b4a3f9e2d1c0b9a8f7e6d.1234",
  c_hash: "kZ2aRtWf-7XVfSNvc5Vb8w",
  email: "dq8xz4yk2p@privaterelay.appleid.com",
  email_verified: "true",
  is_private_email: "true",
  auth_time: nowSeconds,
  nonce_supported: true
}
const appleTokenAnswer = (id_token: string) => ({
  access_token: "a0b1c2d3e4f5.0.apple-access",
  token_type: "Bearer",
  expires_in: 3600,
  refresh_token: "r0b1c2d3e4f5.0.apple-refresh",
  id_token
})
const APPLE_ID_TOKEN = await idToken(APPLE_CLAIMS)
// Another Apple user, whose first sign-in brings their name in the posted `user` field.
const APPLE_NAMED_CLAIMS = { ...APPLE_CLAIMS, sub: "001999.0c9e8d6b4a3f9e2d1c0b9a8f7e6d5a4b.0999", email: "named@example.com", is_private_email: "false" }
const APPLE_NAMED_ID_TOKEN = await idToken(APPLE_NAMED_CLAIMS)
// Signed by Apple's key, but for another app: the audience is not ours.
const APPLE_OTHER_APP_ID_TOKEN = await idToken({ ...APPLE_CLAIMS, aud: "com.example.other" })

const GITLAB_USER = {
  id: 1774303,
  username: "lin",
  name: "Lin Ada",
  state: "active",
  locked: false,
  avatar_url: "https://gitlab.com/uploads/-/system/user/avatar/1774303/avatar.png",
  web_url: "https://gitlab.com/lin",
  created_at: "2017-11-03T09:12:44.512Z",
  bio: "",
  public_email: null,
  email: "lin@example.org",
  confirmed_at: "2017-11-03T09:13:20.118Z",
  two_factor_enabled: true,
  is_admin: false
}

const BITBUCKET_USER = {
  display_name: "Tim Berners",
  links: {
    self: { href: "https://api.bitbucket.org/2.0/users/%7Bd301aafa-d676-4ee0-88be-962be7417567%7D" },
    avatar: { href: "https://secure.gravatar.com/avatar/0e6c9e0c8e1a9d8e0f1a6b1c4e3a2b7d?d=identicon" },
    html: { href: "https://bitbucket.org/%7Bd301aafa-d676-4ee0-88be-962be7417567%7D/" }
  },
  created_on: "2012-09-14T16:51:43.290452+00:00",
  type: "user",
  uuid: "{d301aafa-d676-4ee0-88be-962be7417567}",
  has_2fa_enabled: null,
  username: "tberners",
  is_staff: false,
  account_id: "557058:8c8e7f3a-2e2d-4f3a-9c1a-0d5b3e7f9a1b",
  nickname: "tberners",
  account_status: "active",
  location: null
}
const BITBUCKET_EMAILS = {
  pagelen: 10,
  values: [
    {
      is_primary: false,
      is_confirmed: true,
      type: "email",
      email: "tim-old@example.net",
      links: { self: { href: "https://api.bitbucket.org/2.0/user/emails/tim-old@example.net" } }
    },
    {
      is_primary: true,
      is_confirmed: true,
      type: "email",
      email: "tim@example.net",
      links: { self: { href: "https://api.bitbucket.org/2.0/user/emails/tim@example.net" } }
    }
  ],
  page: 1,
  size: 2
}

const ROWS: ReadonlyArray<Row> = [
  {
    provider: "google",
    clientId: "1234567890-abc.apps.googleusercontent.com",
    secret: "GOCSPX-google-secret",
    url: `${FAKE}/google`,
    authorization: `${FAKE}/google/o/oauth2/v2/auth`,
    authorizeQuery: { scope: "openid email profile" },
    pkce: true,
    callbackMethod: "GET",
    code: "4/0AeanS0google-code",
    tokenPath: "/google/token",
    tokenAnswer: () => ({
      access_token: "ya29.a0AfB_google-access",
      expires_in: 3599,
      refresh_token: "1//0google-refresh",
      scope: "openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
      token_type: "Bearer",
      id_token: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
    }),
    credentials: "body",
    accessToken: "ya29.a0AfB_google-access",
    api: [{ path: "/google/v1/userinfo", json: GOOGLE_USER }],
    providerRefreshToken: "1//0google-refresh",
    email: GOOGLE_USER.email,
    confirmed: true,
    identityId: GOOGLE_USER.sub,
    metadata: { full_name: "Ada Lovelace", avatar_url: GOOGLE_USER.picture, custom_claims: { hd: "analytical.example.com" } }
  },
  {
    provider: "azure",
    clientId: AZURE_CLIENT_ID,
    secret: "azure~client~secret",
    url: `${FAKE}/azure/${AZURE_TENANT}`,
    authorization: `${FAKE}/azure/${AZURE_TENANT}/oauth2/v2.0/authorize`,
    authorizeQuery: { scope: "openid profile email" },
    pkce: true,
    callbackMethod: "GET",
    code: "0.AQ4AFg-azure-code",
    tokenPath: `/azure/${AZURE_TENANT}/oauth2/v2.0/token`,
    tokenAnswer: () => azureTokenAnswer(AZURE_ID_TOKEN),
    keys: { path: `/azure/${AZURE_TENANT}/discovery/v2.0/keys`, forged: () => azureTokenAnswer(AZURE_FORGED_ID_TOKEN) },
    credentials: "body",
    accessToken: "eyJ0eXAiOiJKV1QiLCJub25jZSI6.azure-access",
    api: [],
    providerRefreshToken: "",
    email: AZURE_CLAIMS.email,
    confirmed: true,
    identityId: AZURE_CLAIMS.sub,
    metadata: {
      full_name: "Grace Hopper",
      preferred_username: "grace@contoso.example.com",
      iss: AZURE_CLAIMS.iss,
      custom_claims: { tid: AZURE_TENANT }
    }
  },
  {
    provider: "apple",
    clientId: APPLE_CLIENT_ID,
    secret: APPLE_SECRET,
    url: `${FAKE}/apple`,
    authorization: `${FAKE}/apple/auth/authorize`,
    authorizeQuery: { scope: "name email", response_mode: "form_post" },
    pkce: false,
    callbackMethod: "POST",
    code: "c1a2b3.0.apple-code",
    tokenPath: "/apple/auth/token",
    tokenAnswer: () => appleTokenAnswer(APPLE_ID_TOKEN),
    keys: { path: "/apple/auth/keys", forged: () => appleTokenAnswer(APPLE_OTHER_APP_ID_TOKEN) },
    credentials: "body",
    accessToken: "a0b1c2d3e4f5.0.apple-access",
    api: [],
    providerRefreshToken: "r0b1c2d3e4f5.0.apple-refresh",
    email: APPLE_CLAIMS.email,
    confirmed: true,
    identityId: APPLE_CLAIMS.sub,
    metadata: { iss: "https://appleid.apple.com", email_verified: true, custom_claims: { is_private_email: true } }
  },
  {
    provider: "gitlab",
    clientId: "2bd6e3b2a4e4a1d34c6c4e9b0a6b5e9f2d1c3b4a5e6f7a8b9c0d1e2f3a4b5c6d",
    secret: "gloas-gitlab-secret",
    url: `${FAKE}/gitlab`,
    authorization: `${FAKE}/gitlab/oauth/authorize`,
    authorizeQuery: { scope: "read_user" },
    pkce: true,
    callbackMethod: "GET",
    code: "1c2e3d4f-gitlab-code",
    tokenPath: "/gitlab/oauth/token",
    tokenAnswer: () => ({
      access_token: "de6780bc506a0446309bd9362820ba8aed28aa506c71eedbe1c5c4f9dd350e54",
      token_type: "Bearer",
      expires_in: 7200,
      refresh_token: "8257e65c97202ed1726cf9571600918f3bffb2544b26e00a61df9897668c33a1",
      scope: "read_user",
      created_at: 1607635748
    }),
    credentials: "body",
    accessToken: "de6780bc506a0446309bd9362820ba8aed28aa506c71eedbe1c5c4f9dd350e54",
    api: [{ path: "/gitlab/api/v4/user", json: GITLAB_USER }],
    providerRefreshToken: "8257e65c97202ed1726cf9571600918f3bffb2544b26e00a61df9897668c33a1",
    email: GITLAB_USER.email,
    confirmed: true,
    identityId: "1774303",
    metadata: { full_name: "Lin Ada", user_name: "lin", avatar_url: GITLAB_USER.avatar_url, iss: `${FAKE}/gitlab` }
  },
  {
    provider: "bitbucket",
    clientId: "Ytq7kPnDgB9cEw4xSz",
    secret: "bitbucket-consumer-secret",
    url: `${FAKE}/bitbucket`,
    authorization: `${FAKE}/bitbucket/site/oauth2/authorize`,
    authorizeQuery: { scope: "account email" },
    pkce: false,
    callbackMethod: "GET",
    code: "k9Lm3bitbucket",
    tokenPath: "/bitbucket/site/oauth2/access_token",
    tokenAnswer: () => ({
      access_token: "bitbucket-access-Gm0x1y2z==",
      scopes: "account email",
      token_type: "bearer",
      expires_in: 7200,
      state: "authorization_code",
      refresh_token: "bitbucket-refresh-Qp5"
    }),
    credentials: "basic",
    accessToken: "bitbucket-access-Gm0x1y2z==",
    api: [{ path: "/bitbucket/2.0/user", json: BITBUCKET_USER }, { path: "/bitbucket/2.0/user/emails", json: BITBUCKET_EMAILS }],
    providerRefreshToken: "bitbucket-refresh-Qp5",
    email: "tim@example.net",
    confirmed: true,
    identityId: BITBUCKET_USER.uuid,
    metadata: { full_name: "Tim Berners", user_name: "tberners", avatar_url: BITBUCKET_USER.links.avatar.href }
  }
]

const env = Object.fromEntries(ROWS.flatMap((row) => {
  const key = `AUTH_EXTERNAL_${row.provider.toUpperCase()}`
  return [
    [`${key}_ENABLED`, "true"],
    [`${key}_CLIENT_ID`, row.clientId],
    [`${key}_SECRET`, row.secret],
    [`${key}_REDIRECT_URI`, REDIRECT_URI],
    [`${key}_URL`, row.url]
  ]
}))

for (const row of ROWS) {
  routes.set(row.tokenPath, (request) =>
    form(request)["code"] === row.code
      ? { json: row.tokenAnswer() }
      : form(request)["code"] === "forged" && row.keys !== undefined
      ? { json: row.keys.forged() }
      : { status: 400, json: { error: "invalid_grant", error_description: "Bad Request" } })
  if (row.keys !== undefined) routes.set(row.keys.path, () => ({ json: JWKS }))
  for (const api of row.api) routes.set(api.path, () => ({ json: api.json }))
}

// The named Apple user's code; every other code is answered as the apple row says.
const appleToken = routes.get("/apple/auth/token")!
routes.set("/apple/auth/token", (request) =>
  form(request)["code"] === "named" ? { json: appleTokenAnswer(APPLE_NAMED_ID_TOKEN) } : appleToken(request))

const authorize = (url: string, provider: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const started = yield* call(() =>
      client.signInWithOAuth({ provider: provider as "google", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/home` } }))
    const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

const callback = (url: string, method: "GET" | "POST", query: Record<string, string>) =>
  Effect.map(
    call(() =>
      method === "GET"
        ? b.request(`${url}/callback?${new URLSearchParams(query)}`, { redirect: "manual" })
        : b.request(`${url}/callback`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(query).toString()
        })),
    (response) => ({ status: response.status, location: new URL(response.headers.get("location")!) })
  )

acceptance(env)("sign-in with more providers", (it) => {
  for (const row of ROWS) {
    it.effect(`${row.provider}: the authorize URL, the token request, the profile requests, and the session`, () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        seen.length = 0
        const toProvider = yield* authorize(url, row.provider)
        expect(`${toProvider.origin}${toProvider.pathname}`).toBe(row.authorization)
        expect(Object.fromEntries(toProvider.searchParams)).toEqual({
          response_type: "code",
          client_id: row.clientId,
          redirect_uri: REDIRECT_URI,
          state: expect.stringMatching(/^[0-9a-f-]{36}$/),
          ...(row.pkce ? { code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), code_challenge_method: "S256" } : {}),
          ...row.authorizeQuery
        })

        const { status, location } = yield* callback(url, row.callbackMethod, { code: row.code, state: toProvider.searchParams.get("state")! })
        expect(status).toBe(302)
        const fragment = new URLSearchParams(location.hash.slice(1))
        expect(fragment.get("error_description")).toBeNull()
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
        expect(fragment.get("provider")).toBe(row.provider)
        expect(fragment.get("provider_token")).toBe(row.accessToken)
        expect(fragment.get("provider_refresh_token")).toBe(row.providerRefreshToken)

        const [token, ...api] = seen
        expect(token!.method).toBe("POST")
        expect(token!.path).toBe(row.tokenPath)
        expect(token!.headers["content-type"]).toBe("application/x-www-form-urlencoded")
        expect(token!.headers["accept"]).toBe("application/json")
        expect(token!.headers["authorization"]).toBe(row.credentials === "basic" ? basic(row.clientId, row.secret) : undefined)
        expect(form(token!)).toEqual({
          grant_type: "authorization_code",
          code: row.code,
          redirect_uri: REDIRECT_URI,
          ...(row.pkce ? { code_verifier: expect.stringMatching(/^[A-Za-z0-9_-]{43,128}$/) } : {}),
          ...(row.credentials === "body" ? { client_id: row.clientId, client_secret: row.secret } : {})
        })
        expect(api.map((r) => `${r.method} ${r.path}`).sort()).toEqual(row.api.map((a) => `GET ${a.path}`).sort())
        for (const request of api) {
          expect(request.headers["authorization"]).toBe(`Bearer ${row.accessToken}`)
          const expected = row.api.find((a) => a.path === request.path)?.headers ?? {}
          for (const [name, value] of Object.entries(expected)) expect(request.headers[name]).toBe(value)
        }

        const { client } = authClient(url)
        const { data } = yield* call(() => client.getUser(fragment.get("access_token")!))
        expect(data.user?.email).toBe(row.email)
        expect(Boolean(data.user?.email_confirmed_at)).toBe(row.confirmed)
        expect(data.user?.user_metadata).toMatchObject(row.metadata)
        const identity = data.user?.identities?.find((i) => i.provider === row.provider)
        expect(identity?.id).toBe(row.identityId)
        expect(decodeJwt(fragment.get("access_token")!).payload["app_metadata"]).toMatchObject({ provider: row.provider })
      }))

    it.effect(`${row.provider}: a code the provider refuses ends in an error redirect, never a session`, () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const toProvider = yield* authorize(url, row.provider)
        const { location } = yield* callback(url, row.callbackMethod, { code: "wrong", state: toProvider.searchParams.get("state")! })
        const fragment = new URLSearchParams(location.hash.slice(1))
        expect(fragment.get("access_token")).toBeNull()
        expect(fragment.get("error_description")).toBe("Unable to exchange external code")
      }))

    if (row.keys !== undefined) {
      it.effect(`${row.provider}: an ID token the provider's keys did not sign, or for another app, ends in an error redirect`, () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const toProvider = yield* authorize(url, row.provider)
          const { location } = yield* callback(url, row.callbackMethod, { code: "forged", state: toProvider.searchParams.get("state")! })
          const fragment = new URLSearchParams(location.hash.slice(1))
          expect(fragment.get("access_token")).toBeNull()
          expect(fragment.get("error_description")).toBe("Error getting user profile from external provider")
        }))
    }
  }

  it.effect("apple: the name posted on the first callback is kept in the identity and the user's metadata, and a later sign-in without it keeps it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const signIn = (posted: Record<string, string>) =>
        Effect.gen(function*() {
          const state = (yield* authorize(url, "apple")).searchParams.get("state")!
          const { location } = yield* callback(url, "POST", { state, code: "named", ...posted })
          const fragment = new URLSearchParams(location.hash.slice(1))
          expect(fragment.get("error_description")).toBeNull()
          const { data } = yield* call(() => authClient(url).client.getUser(fragment.get("access_token")!))
          return data.user!
        })
      // Apple's form on the first consent: the name as JSON in `user`, beside the code and state.
      const first = yield* signIn({ user: JSON.stringify({ name: { firstName: "Ada", lastName: "Lovelace" }, email: APPLE_NAMED_CLAIMS.email }) })
      expect(first.email).toBe(APPLE_NAMED_CLAIMS.email)
      expect(first.user_metadata).toMatchObject({ name: "Ada Lovelace", full_name: "Ada Lovelace", sub: APPLE_NAMED_CLAIMS.sub })
      expect(first.identities?.find((i) => i.provider === "apple")?.identity_data).toMatchObject({
        name: "Ada Lovelace",
        full_name: "Ada Lovelace"
      })
      // Apple never posts the name again; the user keeps it.
      const again = yield* signIn({})
      expect(again.id).toBe(first.id)
      expect(again.user_metadata).toMatchObject({ name: "Ada Lovelace", full_name: "Ada Lovelace" })
    }))

  it.effect("apple: a posted user that is not Apple's JSON ends in an error redirect, never a session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const state = (yield* authorize(url, "apple")).searchParams.get("state")!
      const { location } = yield* callback(url, "POST", { state, code: "named", user: "{\"name\":" })
      const fragment = new URLSearchParams(location.hash.slice(1))
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_description")).toBe("Error getting user profile from external provider")
    }))
})
