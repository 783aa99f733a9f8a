import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { LANDING_CSP, landingPage, siteIsThisServer } from "../../../src/auth/landing/LandingPage.js"

const host = FastCheck.constantFrom("localhost", "127.0.0.1", "[::1]", "auth.example.com", "app.example.com")
const scheme = FastCheck.constantFrom("http", "https")
const port = FastCheck.constantFrom("", ":8081", ":3000", ":9999")
const origin = FastCheck.tuple(scheme, host, port).map(([s, h, p]) => `${s}://${h}${p}`)
const suffix = FastCheck.constantFrom("", "/", "/app", "/app/", "?x=1", "/#done", "#")
const listenPort = FastCheck.constantFrom(0, 80, 3000, 8081, 9999)

describe("siteIsThisServer", () => {
  it.prop("a site URL with a path, query or fragment is never this server's root", {
    site: origin, tail: suffix.filter((s) => s !== "" && s !== "/"), external: origin, port: listenPort
  }, ({ external, port, site, tail }) => {
    expect(siteIsThisServer(`${site}${tail}`, external, port)).toBe(false)
  })

  it.prop("SITE_URL equal to API_EXTERNAL_URL (a root, with or without the slash) is this server", {
    url: origin, slashes: FastCheck.tuple(FastCheck.boolean(), FastCheck.boolean()), port: listenPort
  }, ({ port, slashes, url }) => {
    expect(siteIsThisServer(`${url}${slashes[0] ? "/" : ""}`, `${url}${slashes[1] ? "/" : ""}`, port)).toBe(true)
  })

  it.prop("another origin is this server only as this machine's loopback on the port it listens on", {
    site: origin, external: origin, port: listenPort
  }, ({ external, port, site }) => {
    const url = new URL(site)
    const loopback = url.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname) &&
      port !== 0 && (url.port === "" ? 80 : Number(url.port)) === port
    expect(siteIsThisServer(site, external, port)).toBe(new URL(external).origin === url.origin || loopback)
  })

  it("the embedded default's site URL is this server; an app's, or one behind a gateway's path, is not", () => {
    expect(siteIsThisServer("http://localhost:8081", "http://localhost:8081", 8081)).toBe(true)
    // Only API_EXTERNAL_URL was changed: the default site URL still names this machine's port.
    expect(siteIsThisServer("http://localhost:8081", "http://127.0.0.1:8081", 8081)).toBe(true)
    expect(siteIsThisServer("http://localhost:3000", "http://localhost:8081", 8081)).toBe(false)
    expect(siteIsThisServer("https://example.com", "https://example.com/auth/v1", 8081)).toBe(false)
    expect(siteIsThisServer("http://localhost:8081", "http://localhost:8081", 0)).toBe(true)
    expect(siteIsThisServer("http://localhost:8081", "http://localhost:9999", 0)).toBe(false)
    expect(siteIsThisServer("", "http://localhost:8081", 8081)).toBe(false)
  })
})

describe("the landing page", () => {
  const html = landingPage({ outbox: true })
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!)
  const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!)
  const sha256 = (source: string) => `'sha256-${createHash("sha256").update(source, "utf8").digest("base64")}'`

  it("runs only its own inline script and style, by their hashes, and may fetch nothing", () => {
    expect(scripts).toHaveLength(1)
    expect(styles).toHaveLength(1)
    const directives = Object.fromEntries(LANDING_CSP.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]))
    expect(directives).toMatchObject({
      "default-src": "'none'", "connect-src": "'none'", "frame-ancestors": "'none'", "form-action": "'none'", "base-uri": "'none'",
      "script-src": sha256(scripts[0]!), "style-src": sha256(styles[0]!)
    })
  })

  it("loads nothing from anywhere, links only to this server, and writes text, never markup", () => {
    expect(html).not.toMatch(/\ssrc=/)
    expect([...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1])).toEqual(["/_outbox", "/docs", "/openapi.json", "/health"])
    expect(scripts[0]).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|fetch\(|XMLHttpRequest|sendBeacon/)
    expect(landingPage({ outbox: false })).not.toContain("/_outbox")
  })
})
