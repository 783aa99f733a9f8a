import { connect } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { OAUTH_PROVIDERS } from "../../../src/auth/oauth/OAuthProviders.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"

const get = (url: string, init: RequestInit = {}) => Effect.promise(() => fetch(url, init))
const json = (response: Response) => Effect.promise(() => response.json() as Promise<Record<string, any>>)

/** A request written by hand, for what fetch refuses to send (lying Content-Length, chunked bodies). */
const rawRequest = (base: string, text: string) =>
  Effect.async<string>((resume) => {
    const { hostname, port } = new URL(base)
    const socket = connect(Number(port), hostname, () => socket.end(text))
    let received = ""
    socket.on("data", (chunk) => (received += chunk.toString()))
    socket.on("close", () => resume(Effect.succeed(received)))
    socket.on("error", () => resume(Effect.succeed(received)))
  })

layer(TestServer({ AUTH_EXTERNAL_GITHUB_ENABLED: "true", AUTH_EXTERNAL_GITHUB_CLIENT_ID: "id",
  AUTH_EXTERNAL_GITHUB_SECRET: "secret", AUTH_EXTERNAL_GITHUB_REDIRECT_URI: "http://localhost:9999/callback",
  AUTH_MAILER_AUTOCONFIRM: "true" }), { timeout: 120_000 })("system endpoints", (it) => {
  it.effect("GET /health names the service and its version", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* get(`${url}/health`)
      expect(response.status).toBe(200)
      const body = yield* json(response)
      expect(body).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), name: "Gatehouse", description: expect.any(String) })
    }))

  it.effect("GET /settings lists every provider and the switches", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const body = yield* json(yield* get(`${url}/settings`))
      expect(Object.keys(body["external"]).sort()).toEqual(
        [...OAUTH_PROVIDERS, "anonymous_users", "email", "phone", "web3_ethereum", "web3_solana"].sort()
      )
      expect([body["external"]["web3_ethereum"], body["external"]["web3_solana"]]).toEqual([false, false])
      expect(body["external"]["github"]).toBe(true)
      expect(body["external"]["google"]).toBe(false)
      expect(body["external"]["email"]).toBe(true)
      expect(body).toMatchObject({ disable_signup: false, mailer_autoconfirm: true, phone_autoconfirm: false })
    }))

  it.effect("GET /settings has exactly GoTrue v2.196's keys, the spec's autoconfirm and Gatehouse's Web3 switches", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const body = yield* json(yield* get(`${url}/settings`))
      // As measured on GoTrue v2.196 (shared/reference/gotrue-live.md), with the spec's autoconfirm beside them.
      expect(Object.keys(body).sort()).toEqual([
        "autoconfirm", "disable_signup", "external", "mailer_autoconfirm", "passkeys_enabled", "phone_autoconfirm",
        "saml_enabled", "saml_private_key_next_configured", "sms_provider"
      ])
      expect(Object.keys(body["external"]).sort()).toEqual([
        "anonymous_users", "apple", "azure", "bitbucket", "discord", "email", "facebook", "figma", "fly", "github",
        "gitlab", "google", "kakao", "keycloak", "linkedin", "linkedin_oidc", "notion", "phone", "slack", "slack_oidc",
        "snapchat", "spotify", "twitch", "twitter", "workos", "zoom",
        // Gatehouse's own (issue 29 asks for the Web3 switches; GoTrue v2.196 has none), among the providers' flags.
        "web3_ethereum", "web3_solana"
      ].sort())
    }))

  it.effect("an unknown route is a 404 in the legacy envelope without an API version", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      // `/` too: the site URL here is an app's (http://localhost:3000), so no landing page is served.
      for (const path of ["/no/such/route", "/"]) {
        const response = yield* get(`${url}${path}`)
        expect(response.status).toBe(404)
        expect(response.headers.get("x-sb-error-code")).toBe("not_found")
        expect(response.headers.get("x-supabase-api-version")).toBeNull()
        expect(yield* json(response)).toEqual({ code: 404, error_code: "not_found", msg: "Not found" })
      }
    }))

  it.effect("API version 2024-01-01 gets the new envelope and the header echoed", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* get(`${url}/no/such/route`, { headers: { "X-Supabase-Api-Version": "2024-01-01" } })
      expect(response.status).toBe(404)
      expect(response.headers.get("x-supabase-api-version")).toBe("2024-01-01")
      expect(response.headers.get("x-sb-error-code")).toBe("not_found")
      expect(yield* json(response)).toEqual({ code: "not_found", message: "Not found" })
    }))

  it.effect("a body over 1 MB is refused with 413 before routing", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* get(`${url}/signup`, {
        method: "POST",
        headers: { "content-type": "application/json", "X-Supabase-Api-Version": "2024-01-01" },
        body: JSON.stringify({ email: "a@example.com", password: "x".repeat(1024 * 1024) })
      })
      expect(response.status).toBe(413)
      expect(yield* json(response)).toEqual({ code: "request_entity_too_large", message: "Request entity too large" })
    }))

  it.effect("supabase-js's preflight (apikey and all) from any origin is granted with no configuration", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      for (const path of ["/token?grant_type=password", "/auth/v1/token?grant_type=password", "/auth/v1/signup"]) {
        const response = yield* get(`${url}${path}`, {
          method: "OPTIONS",
          headers: {
            Origin: "https://app.example.com",
            "Access-Control-Request-Method": "POST",
            // As chromium sends it for supabase-js's auth calls.
            "Access-Control-Request-Headers": "apikey,authorization,content-type,x-client-info,x-supabase-api-version"
          }
        })
        expect(response.status).toBe(204)
        expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com")
        expect(response.headers.get("access-control-allow-credentials")).toBe("true")
        expect(response.headers.get("access-control-allow-methods")).toBe("POST")
        expect(response.headers.get("access-control-allow-headers")).toBe(
          "apikey, authorization, content-type, x-client-info, x-supabase-api-version"
        )
      }
    }))

  it.effect("a preflight asking for a header outside the list gets no CORS grant", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* get(`${url}/user`, {
        method: "OPTIONS",
        headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "GET",
          "Access-Control-Request-Headers": "x-not-allowed" }
      })
      expect(response.headers.get("access-control-allow-origin")).toBeNull()
    }))

  it.effect("actual responses echo the origin and expose GoTrue's headers", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* get(`${url}/health`, { headers: { Origin: "https://app.example.com" } })
      expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com")
      expect(response.headers.get("access-control-expose-headers")).toBe("X-Total-Count, Link, X-Supabase-Api-Version, X-Sb-Error-Code")
      expect(response.headers.get("vary")).toContain("Origin")
    }))

  it.effect("the OpenAPI document describes the contract and /docs serves a page", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const spec = yield* json(yield* get(`${url}/openapi.json`))
      expect(spec["openapi"]).toMatch(/^3\./)
      expect(Object.keys(spec["paths"])).toEqual(expect.arrayContaining(["/health", "/settings"]))
      const docs = yield* get(`${url}/docs`)
      expect(docs.status).toBe(200)
      expect(docs.headers.get("content-type")).toContain("text/html")
    }))

  it.effect("a chunked body that grows past 1 MB on a route that reads it does not crash the server", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const chunk = "a".repeat(64 * 1024)
      const chunks = Array.from({ length: 20 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join("")
      const reply = yield* rawRequest(url,
        `POST /no/such/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks}0\r\n\r\n`)
      expect(reply).toMatch(/^HTTP\/1\.1 (404|413)/)
      const health = yield* get(`${url}/health`)
      expect(health.status).toBe(200)
    }))
})
