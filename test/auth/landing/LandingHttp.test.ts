import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LANDING_CSP } from "../../../src/auth/landing/LandingPage.js"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { PlatformConfig } from "../../../src/config/PlatformConfig.js"
import { outboxEnabled } from "../../../src/platform/PortsLive.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"

const answer = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual", ...init })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

// The site URL is this server (its API_EXTERNAL_URL), as in the embedded default; see SettingsHttp for `/` without it.
layer(TestServer({ AUTH_SITE_URL: "http://localhost:9999", API_EXTERNAL_URL: "http://localhost:9999" }), { timeout: 120_000 })(
  "the landing page at the site URL",
  (it) => {
    it.effect("GET / answers the page with its strict CSP and no-store, no-referrer headers", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        for (const path of ["/", "/?code=abc", "/?error=access_denied&error_code=otp_expired"]) {
          const got = yield* answer(`${url}${path}`)
          expect(got.status).toBe(200)
          expect(got.headers.get("content-type")).toBe("text/html; charset=utf-8")
          expect(got.headers.get("content-security-policy")).toBe(LANDING_CSP)
          expect(got.headers.get("referrer-policy")).toBe("no-referrer")
          expect(got.headers.get("cache-control")).toBe("no-store")
          expect(got.headers.get("x-content-type-options")).toBe("nosniff")
          expect(got.headers.get("x-frame-options")).toBe("DENY")
          expect(got.text).toContain("Gatehouse is running")
          expect(got.text.includes("href=\"/_outbox\"")).toBe(outboxEnabled({ ...(yield* PlatformConfig), ...(yield* AuthConfig) }))
        }
        expect((yield* answer(`${url}/`, { method: "HEAD" })).status).toBe(200)
      }))

    it.effect("another method at / is a 405 in GoTrue's envelope", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const got = yield* answer(`${url}/`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })
        expect(got.status).toBe(405)
        expect(got.headers.get("allow")).toBe("GET, HEAD")
        expect(JSON.parse(got.text)).toEqual({ code: 405, error_code: "method_not_allowed", msg: "Method not allowed" })
      }))

    it.effect("owns / alone: /auth/v1/ and the auth routes answer as before", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        for (const path of ["/auth/v1", "/auth/v1/", "/index.html"]) {
          const got = yield* answer(`${url}${path}`)
          expect({ path, status: got.status, errorCode: got.headers.get("x-sb-error-code") }).toEqual({ path, status: 404, errorCode: "not_found" })
        }
        const health = yield* answer(`${url}/health`)
        expect(health.status).toBe(200)
        expect(JSON.parse(health.text)).toMatchObject({ name: "Gatehouse" })
        const settings = yield* answer(`${url}/auth/v1/settings`)
        expect(settings.status).toBe(200)
        expect(settings.headers.get("content-security-policy")).toBeNull()
      }))
  }
)
