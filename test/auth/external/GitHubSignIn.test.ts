/**
 * Sign-in with github against support/GitHubFake: a local server in GitHub's place (EXTERNAL_GITHUB_URL, a GitHub
 * Enterprise Server's layout: the OAuth pages at the root, the REST API under /api/v3), answering in GitHub's real
 * response shapes. The test checks every request GitHub would receive: method, path, headers and form body.
 */
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, decodeJwt } from "../acceptance/AcceptanceKit.js"
import {
  GITHUB_ACCESS_TOKEN as ACCESS_TOKEN,
  GITHUB_CLIENT_ID as CLIENT_ID,
  GITHUB_CLIENT_SECRET as CLIENT_SECRET,
  GITHUB_CODE as CODE,
  GITHUB_REDIRECT_URI as REDIRECT_URI,
  githubEnv,
  octocat as user,
  startGitHubFake
} from "../support/GitHubFake.js"
import { browser } from "../support/Browser.js"

const SITE_URL = "http://localhost:3000"
// The user's browser: it keeps the cookie /authorize sets (the OAuth browser binding) and brings it to /callback.
const b = browser()

const github = await startGitHubFake()
const GITHUB_URL = github.url
const seen = github.seen
afterAll(() => github.close())

const authorize = (url: string, redirectTo?: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const started = yield* call(() =>
      client.signInWithOAuth({
        provider: "github",
        options: { skipBrowserRedirect: true, scopes: "read:org", ...(redirectTo === undefined ? {} : { redirectTo }) }
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

acceptance(githubEnv(github))("github sign-in", (it) => {
  it.effect("the authorize URL, the token request, the profile requests, and the session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      github.emails = [
        { email: "octocat-secondary@example.com", primary: false, verified: true, visibility: null },
        { email: "octocat@example.com", primary: true, verified: true, visibility: "public" }
      ]
      seen.length = 0
      const toGitHub = yield* authorize(url, `${SITE_URL}/home`)
      expect(`${toGitHub.origin}${toGitHub.pathname}`).toBe(`${GITHUB_URL}/login/oauth/authorize`)
      expect(Object.fromEntries(toGitHub.searchParams)).toEqual({
        response_type: "code",
        client_id: CLIENT_ID,
        redirect_uri: REDIRECT_URI,
        state: expect.stringMatching(/^[0-9a-f-]{36}$/),
        scope: "user:email read:org",
        code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        code_challenge_method: "S256"
      })

      const { status, location } = yield* callback(url, { code: CODE, state: toGitHub.searchParams.get("state")! })
      expect(status).toBe(302)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/home`)
      const fragment = new URLSearchParams(location.hash.slice(1))
      expect(fragment.get("provider")).toBe("github")
      expect(fragment.get("provider_token")).toBe(ACCESS_TOKEN)
      expect(fragment.get("provider_refresh_token")).toBe("")

      const [token, ...api] = seen
      expect(token!.method).toBe("POST")
      expect(token!.path).toBe("/login/oauth/access_token")
      expect(token!.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(token!.headers["accept"]).toBe("application/json")
      expect(token!.headers["authorization"]).toBe(`Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`)
      const form = Object.fromEntries(new URLSearchParams(token!.body))
      expect(form).toEqual({
        grant_type: "authorization_code",
        code: CODE,
        redirect_uri: REDIRECT_URI,
        code_verifier: expect.stringMatching(/^[A-Za-z0-9_-]{43,128}$/)
      })
      expect(api.map((r) => `${r.method} ${r.path}`).sort()).toEqual(["GET /api/v3/user", "GET /api/v3/user/emails"])
      for (const request of api) {
        expect(request.headers["authorization"]).toBe(`Bearer ${ACCESS_TOKEN}`)
        expect(request.headers["accept"]).toBe("application/vnd.github+json")
        expect(request.headers["user-agent"]).toBe("gatehouse")
      }

      const { client } = authClient(url)
      const { data } = yield* call(() => client.getUser(fragment.get("access_token")!))
      expect(data.user?.email).toBe("octocat@example.com")
      expect(data.user?.email_confirmed_at).toBeTruthy()
      expect(data.user?.user_metadata).toMatchObject({
        full_name: "The Octocat",
        avatar_url: user.avatar_url,
        user_name: "octocat",
        preferred_username: "octocat"
      })
      const identity = data.user?.identities?.find((i) => i.provider === "github")
      expect(identity?.id).toBe("583231")
      expect(decodeJwt(fragment.get("access_token")!).payload["app_metadata"]).toMatchObject({ provider: "github" })
    }))

  it.effect("an app's other /authorize parameters go on to GitHub, but never over the protocol's own", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const started = yield* call(() =>
        client.signInWithOAuth({
          provider: "github",
          options: { skipBrowserRedirect: true, queryParams: { login: "octocat", allow_signup: "false", state: "mine", client_id: "other" } }
        }))
      const response = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
      const toGitHub = new URL(response.headers.get("location")!)
      expect(toGitHub.searchParams.get("login")).toBe("octocat")
      expect(toGitHub.searchParams.get("allow_signup")).toBe("false")
      expect(toGitHub.searchParams.getAll("state")).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)])
      expect(toGitHub.searchParams.getAll("client_id")).toEqual([CLIENT_ID])
    }))

  it.effect("a code GitHub refuses ends in an error redirect, never a session", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const toGitHub = yield* authorize(url)
      const { location } = yield* callback(url, { code: "wrong", state: toGitHub.searchParams.get("state")! })
      const fragment = new URLSearchParams(location.hash.slice(1))
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error")).toBe("server_error")
      expect(fragment.get("error_description")).toBe("Unable to exchange external code")
    }))

  it.effect("POST /callback (form_post, here under /auth/v1) works as GET does", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      github.emails = [{ email: "octocat@example.com", primary: true, verified: true, visibility: "public" }]
      const toGitHub = yield* authorize(url)
      const response = yield* call(() =>
        b.request(`${url}/auth/v1/callback`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ code: CODE, state: toGitHub.searchParams.get("state")! }).toString()
        }))
      expect(response.status).toBe(302)
      const location = new URL(response.headers.get("location")!)
      expect(new URLSearchParams(location.hash.slice(1)).get("access_token")).toBeTruthy()
    }))
})
