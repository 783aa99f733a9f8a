/**
 * Sign-in with discord, facebook, spotify, slack, linkedin and notion, each against a local server in the
 * provider's place (EXTERNAL_<P>_URL, one path prefix per provider), answering in the provider's real response
 * shapes. For each, the test checks the authorize URL and every request the provider would receive (method, path,
 * headers, body), then the session (or, for a provider that does not verify addresses, the refusal and the user
 * and identity kept for later).
 */
import { createHmac } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, decodeJwt } from "../acceptance/AcceptanceKit.js"
import { browser } from "../support/Browser.js"

const SITE_URL = "http://localhost:3000"
// The user's browser: it keeps the cookie /authorize sets (the OAuth browser binding) and brings it to /callback.
const b = browser()
const REDIRECT_URI = "http://localhost:9999/callback"
const CODE = "c0de-from-the-provider"

interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

interface ApiCall {
  /** Path and query as the provider receives them, after the case's prefix. */
  readonly path: string
  readonly answer: unknown
  readonly headers?: Record<string, string>
}

interface Case {
  readonly provider: string
  readonly clientId: string
  readonly secret: string
  readonly accessToken: string
  readonly refreshToken: string | null
  readonly authorizePath: string
  /** The authorize URL's query besides response_type, client_id, redirect_uri and state. */
  readonly authorizeQuery: Record<string, unknown>
  readonly pkce: boolean
  readonly tokenPath: string
  readonly credentials: "basic" | "body"
  readonly encoding: "form" | "json"
  readonly tokenAnswer: Record<string, unknown>
  /** How the provider refuses a bad code: status and body. */
  readonly refusal: readonly [number, unknown]
  readonly api: ReadonlyArray<ApiCall>
  readonly identityId: string
  readonly email: string
  readonly verified: boolean
  readonly metadata: Record<string, unknown>
}

const CASES: ReadonlyArray<Case> = [
  {
    provider: "discord",
    clientId: "1234567890123456789",
    secret: "discord-client-secret",
    accessToken: "6qrZcUqja7812RVdnEKjpzOL4CvHBFG",
    refreshToken: "D43f5y0ahjqew82jZ4NViEr2YafMKhue",
    authorizePath: "/api/oauth2/authorize",
    authorizeQuery: { scope: "email identify guilds" },
    pkce: true,
    tokenPath: "/api/oauth2/token",
    credentials: "basic",
    encoding: "form",
    tokenAnswer: {
      access_token: "6qrZcUqja7812RVdnEKjpzOL4CvHBFG",
      token_type: "Bearer",
      expires_in: 604800,
      refresh_token: "D43f5y0ahjqew82jZ4NViEr2YafMKhue",
      scope: "email identify guilds"
    },
    refusal: [400, { error: "invalid_grant", error_description: "Invalid \"code\" in request." }],
    api: [{
      path: "/api/users/@me",
      answer: {
        id: "80351110224678912",
        username: "nelly",
        discriminator: "0",
        global_name: "Nelly",
        avatar: "8342729096ea3675442027381ff50dfe",
        bot: false,
        mfa_enabled: true,
        banner: null,
        accent_color: null,
        locale: "en-US",
        verified: true,
        email: "nelly@discord.example.com",
        flags: 64,
        premium_type: 1,
        public_flags: 64
      }
    }],
    identityId: "80351110224678912",
    email: "nelly@discord.example.com",
    verified: true,
    metadata: {
      full_name: "Nelly",
      user_name: "nelly",
      avatar_url: "https://cdn.discordapp.com/avatars/80351110224678912/8342729096ea3675442027381ff50dfe.png",
      custom_claims: { global_name: "Nelly" }
    }
  },
  {
    provider: "facebook",
    clientId: "1043787936329041",
    secret: "facebook-app-secret",
    accessToken: "EAAO1Z2kZCcZBkBO7ZC9ZCZBZCkZAlZBZBZCZAZB4ZD",
    refreshToken: null,
    authorizePath: "/v22.0/dialog/oauth",
    authorizeQuery: { scope: "email" },
    pkce: false,
    tokenPath: "/v22.0/oauth/access_token",
    credentials: "body",
    encoding: "form",
    tokenAnswer: { access_token: "EAAO1Z2kZCcZBkBO7ZC9ZCZBZCkZAlZBZBZCZAZB4ZD", token_type: "bearer", expires_in: 5183944 },
    refusal: [400, {
      error: { message: "Invalid verification code format.", type: "OAuthException", code: 100, fbtrace_id: "AbCdEfGhIjK" }
    }],
    api: [{
      path: `/v22.0/me?fields=id%2Cname%2Cfirst_name%2Clast_name%2Cemail%2Cpicture&appsecret_proof=${
        createHmac("sha256", "facebook-app-secret").update("EAAO1Z2kZCcZBkBO7ZC9ZCZBZCkZAlZBZBZCZAZB4ZD").digest("hex")
      }`,
      answer: {
        id: "10158795368123456",
        name: "Mark Example",
        first_name: "Mark",
        last_name: "Example",
        email: "mark@facebook.example.com",
        picture: {
          data: {
            height: 50,
            is_silhouette: false,
            url: "https://platform-lookaside.fbsbx.com/platform/profilepic/?asid=10158795368123456&height=50&width=50&ext=1700000000&hash=AbC",
            width: 50
          }
        }
      }
    }],
    identityId: "10158795368123456",
    email: "mark@facebook.example.com",
    verified: true,
    metadata: {
      full_name: "Mark Example",
      given_name: "Mark",
      family_name: "Example",
      avatar_url: "https://platform-lookaside.fbsbx.com/platform/profilepic/?asid=10158795368123456&height=50&width=50&ext=1700000000&hash=AbC"
    }
  },
  {
    provider: "spotify",
    clientId: "5fe01282e44241328a84e7c5cc169165",
    secret: "spotify-client-secret",
    accessToken: "BQBLuPRYBQ5zcfxf6IgHvW0S2e7Xr2Rt5dRzN0ZbL6e",
    refreshToken: "AQDi1Jq6_2k9nX2hXbNfYl1wYkq0Gd8p",
    authorizePath: "/authorize",
    authorizeQuery: { scope: "user-read-email user-top-read" },
    pkce: true,
    tokenPath: "/api/token",
    credentials: "basic",
    encoding: "form",
    tokenAnswer: {
      access_token: "BQBLuPRYBQ5zcfxf6IgHvW0S2e7Xr2Rt5dRzN0ZbL6e",
      token_type: "Bearer",
      scope: "user-read-email user-top-read",
      expires_in: 3600,
      refresh_token: "AQDi1Jq6_2k9nX2hXbNfYl1wYkq0Gd8p"
    },
    refusal: [400, { error: "invalid_grant", error_description: "Invalid authorization code" }],
    api: [{
      path: "/v1/me",
      answer: {
        country: "SE",
        display_name: "Sam Listener",
        email: "sam@spotify.example.com",
        explicit_content: { filter_enabled: false, filter_locked: false },
        external_urls: { spotify: "https://open.spotify.com/user/smedjan" },
        followers: { href: null, total: 12 },
        href: "https://api.spotify.com/v1/users/smedjan",
        id: "smedjan",
        images: [
          { url: "https://i.scdn.co/image/ab67757000003b82small", height: 64, width: 64 },
          { url: "https://i.scdn.co/image/ab6775700000ee85large", height: 300, width: 300 }
        ],
        product: "premium",
        type: "user",
        uri: "spotify:user:smedjan"
      }
    }],
    identityId: "smedjan",
    email: "sam@spotify.example.com",
    verified: false,
    metadata: { full_name: "Sam Listener", avatar_url: "https://i.scdn.co/image/ab6775700000ee85large", email_verified: false }
  },
  {
    provider: "slack",
    clientId: "2141029472.691202649728",
    secret: "slack-client-secret",
    accessToken: "xoxp-1234-U0R7JM",
    refreshToken: null,
    authorizePath: "/openid/connect/authorize",
    authorizeQuery: { scope: "openid profile email" },
    pkce: false,
    tokenPath: "/api/openid.connect.token",
    credentials: "body",
    encoding: "form",
    tokenAnswer: {
      ok: true,
      access_token: "xoxp-1234-U0R7JM",
      token_type: "Bearer",
      id_token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJVMFI3Sk0ifQ.c2lnbmF0dXJl"
    },
    // Slack's Web API refuses with HTTP 200.
    refusal: [200, { ok: false, error: "invalid_code" }],
    api: [{
      path: "/api/openid.connect.userInfo",
      answer: {
        ok: true,
        sub: "U0R7JM",
        "https://slack.com/user_id": "U0R7JM",
        "https://slack.com/team_id": "T0R7GR",
        email: "krane@slack.example.com",
        email_verified: true,
        date_email_verified: 1622128723,
        name: "krane",
        picture: "https://secure.gravatar.com/avatar/krane.jpg?s=512",
        given_name: "Bront",
        family_name: "Labradoodle",
        locale: "en-US",
        "https://slack.com/team_name": "kraneflannel",
        "https://slack.com/team_domain": "kraneflannel",
        "https://slack.com/user_image_24": "https://secure.gravatar.com/avatar/krane.jpg?s=24",
        "https://slack.com/team_image_default": true
      }
    }],
    identityId: "U0R7JM",
    email: "krane@slack.example.com",
    verified: true,
    metadata: {
      full_name: "krane",
      avatar_url: "https://secure.gravatar.com/avatar/krane.jpg?s=512",
      given_name: "Bront",
      custom_claims: { "https://slack.com/team_id": "T0R7GR" }
    }
  },
  {
    provider: "slack_oidc",
    clientId: "2141029472.691202649728",
    secret: "slack-client-secret",
    accessToken: "xoxp-1234-U0R7JN",
    refreshToken: null,
    authorizePath: "/openid/connect/authorize",
    authorizeQuery: { scope: "openid profile email" },
    pkce: false,
    tokenPath: "/api/openid.connect.token",
    credentials: "body",
    encoding: "form",
    tokenAnswer: {
      ok: true,
      access_token: "xoxp-1234-U0R7JN",
      token_type: "Bearer",
      id_token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJVMFI3Sk0ifQ.c2lnbmF0dXJl"
    },
    // Slack's Web API refuses with HTTP 200.
    refusal: [200, { ok: false, error: "invalid_code" }],
    api: [{
      path: "/api/openid.connect.userInfo",
      answer: {
        ok: true,
        sub: "U0R7JN",
        "https://slack.com/user_id": "U0R7JN",
        "https://slack.com/team_id": "T0R7GR",
        email: "krane-oidc@slack.example.com",
        email_verified: true,
        date_email_verified: 1622128723,
        name: "krane",
        picture: "https://secure.gravatar.com/avatar/krane.jpg?s=512",
        given_name: "Bront",
        family_name: "Labradoodle",
        locale: "en-US",
        "https://slack.com/team_name": "kraneflannel",
        "https://slack.com/team_domain": "kraneflannel",
        "https://slack.com/user_image_24": "https://secure.gravatar.com/avatar/krane.jpg?s=24",
        "https://slack.com/team_image_default": true
      }
    }],
    identityId: "U0R7JN",
    email: "krane-oidc@slack.example.com",
    verified: true,
    metadata: {
      full_name: "krane",
      avatar_url: "https://secure.gravatar.com/avatar/krane.jpg?s=512",
      given_name: "Bront",
      custom_claims: { "https://slack.com/team_id": "T0R7GR" }
    }
  },
  {
    provider: "linkedin",
    clientId: "86w3h5k2m9xq1z",
    secret: "linkedin-client-secret",
    accessToken: "AQXdSP_W41_UPs5ioT_t8HESyODB4FqbkJ8LrV_5mff4gPODzOYR-782bbtaQ",
    refreshToken: null,
    authorizePath: "/oauth/v2/authorization",
    authorizeQuery: { scope: "openid profile email" },
    pkce: false,
    tokenPath: "/oauth/v2/accessToken",
    credentials: "body",
    encoding: "form",
    tokenAnswer: {
      access_token: "AQXdSP_W41_UPs5ioT_t8HESyODB4FqbkJ8LrV_5mff4gPODzOYR-782bbtaQ",
      expires_in: 5183999,
      scope: "email,openid,profile",
      token_type: "Bearer",
      id_token: "eyJ6aXAiOiJERUYiLCJraWQiOiJkOTI5NjY4YS1iYWI1LTRjNjktOTU5OC00MzczMTQ5NzIzZmYiLCJhbGciOiJSUzI1NiJ9.e30.c2ln"
    },
    refusal: [400, {
      error: "invalid_request",
      error_description: "Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired."
    }],
    api: [{
      path: "/v2/userinfo",
      answer: {
        sub: "782bbtaQ",
        email_verified: true,
        name: "John Doe",
        locale: { country: "US", language: "en" },
        given_name: "John",
        family_name: "Doe",
        email: "john@linkedin.example.com",
        picture: "https://media.licdn.com/dms/image/C5603AQH/profile-displayphoto-shrink_100_100/0/1600000000000"
      }
    }],
    identityId: "782bbtaQ",
    email: "john@linkedin.example.com",
    verified: true,
    metadata: {
      full_name: "John Doe",
      given_name: "John",
      family_name: "Doe",
      avatar_url: "https://media.licdn.com/dms/image/C5603AQH/profile-displayphoto-shrink_100_100/0/1600000000000"
    }
  },
  {
    provider: "linkedin_oidc",
    clientId: "86w3h5k2m9xq1z",
    secret: "linkedin-client-secret",
    accessToken: "AQXdSP_W41_UPs5ioT_t8HESyODB4FqbkJ8LrV_5mff4gPODzOYR-782bbtaR",
    refreshToken: null,
    authorizePath: "/oauth/v2/authorization",
    authorizeQuery: { scope: "openid profile email" },
    pkce: false,
    tokenPath: "/oauth/v2/accessToken",
    credentials: "body",
    encoding: "form",
    tokenAnswer: {
      access_token: "AQXdSP_W41_UPs5ioT_t8HESyODB4FqbkJ8LrV_5mff4gPODzOYR-782bbtaR",
      expires_in: 5183999,
      scope: "email,openid,profile",
      token_type: "Bearer",
      id_token: "eyJ6aXAiOiJERUYiLCJraWQiOiJkOTI5NjY4YS1iYWI1LTRjNjktOTU5OC00MzczMTQ5NzIzZmYiLCJhbGciOiJSUzI1NiJ9.e30.c2ln"
    },
    refusal: [400, {
      error: "invalid_request",
      error_description: "Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired."
    }],
    api: [{
      path: "/v2/userinfo",
      answer: {
        sub: "782bbtaR",
        email_verified: true,
        name: "John Doe",
        locale: { country: "US", language: "en" },
        given_name: "John",
        family_name: "Doe",
        email: "john-oidc@linkedin.example.com",
        picture: "https://media.licdn.com/dms/image/C5603AQH/profile-displayphoto-shrink_100_100/0/1600000000000"
      }
    }],
    identityId: "782bbtaR",
    email: "john-oidc@linkedin.example.com",
    verified: true,
    metadata: {
      full_name: "John Doe",
      given_name: "John",
      family_name: "Doe",
      avatar_url: "https://media.licdn.com/dms/image/C5603AQH/profile-displayphoto-shrink_100_100/0/1600000000000"
    }
  },
  {
    provider: "notion",
    clientId: "1b2d872b-594c-80a8-a1e4-0037c2d3e2f1",
    secret: "secret_notion-client-secret",
    accessToken: "ntn_4537128964082wJh1dNbl8tT2nR3Y6sKcX5vQ9a0Mz",
    refreshToken: "nrt_4537128964085xN3kYbWq7cZ1",
    authorizePath: "/v1/oauth/authorize",
    authorizeQuery: { owner: "user" },
    pkce: false,
    tokenPath: "/v1/oauth/token",
    credentials: "basic",
    encoding: "json",
    tokenAnswer: {
      access_token: "ntn_4537128964082wJh1dNbl8tT2nR3Y6sKcX5vQ9a0Mz",
      token_type: "bearer",
      refresh_token: "nrt_4537128964085xN3kYbWq7cZ1",
      bot_id: "b3414d65-1224-4ff7-9ffe-cc9d8773d601",
      workspace_name: "Ada's Notion Workspace",
      workspace_icon: "https://s3-us-west-2.amazonaws.com/public.notion-static.com/icon.png",
      workspace_id: "5f6f7d4a-2882-41b5-964a-889d9ac36f17",
      owner: {
        type: "user",
        user: {
          object: "user",
          id: "e79a0b74-3aba-4149-9f74-0bb5791a6ee6",
          name: "Ada Lovelace",
          avatar_url: "https://s3-us-west-2.amazonaws.com/public.notion-static.com/avatar.png",
          type: "person",
          person: { email: "ada@notion.example.com" }
        }
      },
      duplicated_template_id: null,
      request_id: "9b3a1c2e-3f4d-4b5a-8c6d-7e8f9a0b1c2d"
    },
    refusal: [400, { error: "invalid_grant", error_description: "Invalid code: this code has been revoked." }],
    api: [],
    identityId: "e79a0b74-3aba-4149-9f74-0bb5791a6ee6",
    email: "ada@notion.example.com",
    verified: false,
    metadata: {
      full_name: "Ada Lovelace",
      avatar_url: "https://s3-us-west-2.amazonaws.com/public.notion-static.com/avatar.png",
      custom_claims: { workspace_id: "5f6f7d4a-2882-41b5-964a-889d9ac36f17", workspace_name: "Ada's Notion Workspace" }
    }
  }
]

/** Which scopes the app asks for on top of the provider's own, per provider (some take none). */
const APP_SCOPES: Record<string, string | undefined> = { discord: "guilds", spotify: "user-top-read" }

const seen: Array<Seen> = []

const caseFor = (path: string) => CASES.find((c) => path.startsWith(`/${c.provider}/`))

const fake = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const full = req.url ?? "/"
    const body = Buffer.concat(chunks).toString("utf8")
    const c = caseFor(full)
    const path = c === undefined ? full : full.slice(c.provider.length + 1)
    seen.push({ method: req.method ?? "GET", path, headers: req.headers, body })
    res.setHeader("content-type", "application/json; charset=utf-8")
    const send = (status: number, answer: unknown) => {
      res.statusCode = status
      res.end(JSON.stringify(answer))
    }
    if (c === undefined) return send(404, { message: "Not Found" })
    if (path === c.tokenPath) {
      const code = c.encoding === "json" ? (JSON.parse(body) as Record<string, string>)["code"] : new URLSearchParams(body).get("code")
      return code === CODE ? send(200, c.tokenAnswer) : send(...c.refusal)
    }
    const api = c.api.find((a) => a.path === path)
    return api === undefined ? send(404, { message: "Not Found" }) : send(200, api.answer)
  })
})
await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve))
const address = fake.address()
const FAKE_URL = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
afterAll(() => new Promise<void>((resolve) => fake.close(() => resolve())))

const env = Object.fromEntries(CASES.flatMap((c) => {
  const key = `AUTH_EXTERNAL_${c.provider.toUpperCase()}`
  return [
    [`${key}_ENABLED`, "true"],
    [`${key}_CLIENT_ID`, c.clientId],
    [`${key}_SECRET`, c.secret],
    [`${key}_REDIRECT_URI`, REDIRECT_URI],
    [`${key}_URL`, `${FAKE_URL}/${c.provider}`]
  ]
}))

const authorize = (url: string, c: Case, redirectTo?: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const scopes = APP_SCOPES[c.provider]
    const started = yield* call(() =>
      client.signInWithOAuth({
        provider: c.provider as "discord",
        options: { skipBrowserRedirect: true, ...(scopes === undefined ? {} : { scopes }), ...(redirectTo === undefined ? {} : { redirectTo }) }
      }))
    const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

const callback = (url: string, query: Record<string, string>) =>
  Effect.map(call(() => b.request(`${url}/callback?${new URLSearchParams(query)}`, { redirect: "manual" })), (response) => ({
    status: response.status,
    location: new URL(response.headers.get("location")!)
  }))

const admin = (url: string) => authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}`, apikey: adminJwt() } }).client

acceptance(env)("social sign-in", (it) => {
  for (const c of CASES) {
    it.effect(`${c.provider}: the authorize URL, the token request, the profile requests, and the ${c.verified ? "session" : "refusal"}`, () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        seen.length = 0
        const toProvider = yield* authorize(url, c, `${SITE_URL}/home`)
        expect(`${toProvider.origin}${toProvider.pathname}`).toBe(`${FAKE_URL}/${c.provider}${c.authorizePath}`)
        expect(Object.fromEntries(toProvider.searchParams)).toEqual({
          response_type: "code",
          client_id: c.clientId,
          redirect_uri: REDIRECT_URI,
          state: expect.stringMatching(/^[0-9a-f-]{36}$/),
          ...c.authorizeQuery,
          ...(c.pkce ? { code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), code_challenge_method: "S256" } : {})
        })

        const { status, location } = yield* callback(url, { code: CODE, state: toProvider.searchParams.get("state")! })
        expect(status).toBe(302)
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
        const fragment = new URLSearchParams(location.hash.slice(1))

        const [token, ...api] = seen
        expect(token!.method).toBe("POST")
        expect(token!.path).toBe(c.tokenPath)
        expect(token!.headers["accept"]).toBe("application/json")
        const basic = `Basic ${Buffer.from(`${c.clientId}:${c.secret}`).toString("base64")}`
        expect(token!.headers["authorization"]).toBe(c.credentials === "basic" ? basic : undefined)
        expect(token!.headers["content-type"]).toBe(c.encoding === "json" ? "application/json" : "application/x-www-form-urlencoded")
        const sent = c.encoding === "json" ? JSON.parse(token!.body) : Object.fromEntries(new URLSearchParams(token!.body))
        expect(sent).toEqual({
          grant_type: "authorization_code",
          code: CODE,
          redirect_uri: REDIRECT_URI,
          ...(c.pkce ? { code_verifier: expect.stringMatching(/^[A-Za-z0-9_-]{43,128}$/) } : {}),
          ...(c.credentials === "body" ? { client_id: c.clientId, client_secret: c.secret } : {})
        })
        expect(api.map((r) => `${r.method} ${r.path}`).sort()).toEqual(c.api.map((a) => `GET ${a.path}`).sort())
        for (const request of api) {
          expect(request.headers["authorization"]).toBe(`Bearer ${c.accessToken}`)
          expect(request.headers).toMatchObject(c.api.find((a) => a.path === request.path)?.headers ?? {})
        }

        if (!c.verified) {
          expect(fragment.get("access_token")).toBeNull()
          expect(fragment.get("error_code")).toBe("provider_email_needs_verification")
          const { data } = yield* call(() => admin(url).admin.listUsers({ perPage: 1000 }))
          const user = data.users.find((u) => u.email === c.email)
          expect(user?.email_confirmed_at ?? null).toBeNull()
          expect(user?.user_metadata).toMatchObject(c.metadata)
          expect(user?.identities?.find((i) => i.provider === c.provider)?.id).toBe(c.identityId)
          return
        }
        expect(fragment.get("provider")).toBe(c.provider)
        expect(fragment.get("provider_token")).toBe(c.accessToken)
        expect(fragment.get("provider_refresh_token")).toBe(c.refreshToken ?? "")
        const { data } = yield* call(() => authClient(url).client.getUser(fragment.get("access_token")!))
        expect(data.user?.email).toBe(c.email)
        expect(data.user?.email_confirmed_at).toBeTruthy()
        expect(data.user?.user_metadata).toMatchObject(c.metadata)
        expect(data.user?.identities?.find((i) => i.provider === c.provider)?.id).toBe(c.identityId)
        expect(decodeJwt(fragment.get("access_token")!).payload["app_metadata"]).toMatchObject({ provider: c.provider })
      }))

    it.effect(`${c.provider}: a code the provider refuses ends in an error redirect, never a session`, () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const toProvider = yield* authorize(url, c)
        const { location } = yield* callback(url, { code: "wrong", state: toProvider.searchParams.get("state")! })
        const fragment = new URLSearchParams(location.hash.slice(1))
        expect(fragment.get("access_token")).toBeNull()
        expect(fragment.get("error")).toBe("server_error")
        expect(fragment.get("error_description")).toBe("Unable to exchange external code")
      }))
  }

  it.effect("notion: owner=user always, whatever owner an app passes", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const started = yield* call(() =>
        authClient(url).client.signInWithOAuth({
          provider: "notion",
          options: { skipBrowserRedirect: true, queryParams: { owner: "workspace" } }
        }))
      const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
      expect(new URL(response.headers.get("location")!).searchParams.getAll("owner")).toEqual(["user"])
    }))
})
