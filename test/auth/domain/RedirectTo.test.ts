import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { compileAllowList } from "../../../src/domain/RedirectAllowList.js"
import { allowedRedirect, chooseRedirect } from "../../../src/auth/domain/RedirectTo.js"

const SITE = "https://app.example.com"
const none = compileAllowList([])
const list = compileAllowList(["https://*.preview.example.com/**", "http://localhost:*/**", "myapp://callback/**"])

describe("chooseRedirect", () => {
  it("falls back to SITE_URL when nothing is asked", () => {
    expect(chooseRedirect(undefined, SITE, list)).toBe(SITE)
    expect(chooseRedirect("", SITE, list)).toBe(SITE)
  })

  it.each([
    ["https://app.example.com/welcome?step=2#top", "https://app.example.com/welcome?step=2#top"],
    ["HTTPS://APP.example.com:443/a/../b", "https://app.example.com/b"],
    ["https://pr-7.preview.example.com/auth/cb", "https://pr-7.preview.example.com/auth/cb"],
    ["http://localhost:5173/", "http://localhost:5173/"],
    ["myapp://callback/done", "myapp://callback/done"]
  ])("keeps %j as %j", (requested, expected) => {
    expect(chooseRedirect(requested, SITE, list)).toBe(expected)
  })

  it.each([
    "https://evil.com/",
    "https://app.example.com.evil.com/",
    "https://preview.example.com/",
    "https://a.b.preview.example.com/",
    "http://app.example.com/",
    "https://app.example.com:8443/",
    "https://app.example.com@evil.com/",
    "https://app.example.com:443@evil.com/",
    "https:\\\\evil.com",
    "https://app.example.com\\@evil.com",
    "https://ap%70.example.com/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "javascript:alert(document.cookie)",
    "javascript://app.example.com/%0Aalert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "//evil.com/",
    "///evil.com/",
    "https:evil.com",
    " https://evil.com",
    "https://app.example.com\n.evil.com/",
    "java\nscript:alert(1)",
    "/relative/path",
    "http://10.1.2.3/"
  ])("replaces %j with SITE_URL", (requested) => {
    expect(chooseRedirect(requested, SITE, list)).toBe(SITE)
  })

  it("accepts any port on a loopback SITE_URL (RFC 8252), and only there", () => {
    expect(chooseRedirect("http://localhost:9999/cb", "http://localhost:3000", none)).toBe("http://localhost:9999/cb")
    expect(chooseRedirect("http://127.0.0.1:9999/cb", "http://127.0.0.1:3000", none)).toBe("http://127.0.0.1:9999/cb")
    expect(chooseRedirect("http://[::1]:9999/cb", "http://[::1]:3000", none)).toBe("http://[::1]:9999/cb")
    expect(chooseRedirect("https://app.example.com:9999/cb", SITE, none)).toBe(SITE)
  })

  it("trusts SITE_URL's own host even when it is an IP address", () => {
    expect(chooseRedirect("http://10.1.2.3:3000/cb", "http://10.1.2.3:3000", none)).toBe("http://10.1.2.3:3000/cb")
  })

  const label = FastCheck.stringMatching(/^[a-z0-9]([a-z0-9-]{0,15}[a-z0-9])?$/)
  const segment = FastCheck.stringMatching(/^[A-Za-z0-9_~-]{1,10}$/)
  const path = FastCheck.array(segment, { maxLength: 4 }).map((s) => `/${s.join("/")}`)
  const anything = FastCheck.oneof(
    FastCheck.string({ maxLength: 60 }),
    FastCheck.webUrl({ withFragments: true, withQueryParameters: true }),
    FastCheck.tuple(
      FastCheck.constantFrom("https://app.example.com", "https://x.preview.example.com", "http://localhost:1", "//", "https:\\\\"),
      FastCheck.string({ maxLength: 30 })
    ).map(([a, b]) => a + b)
  )

  it.prop("the answer is SITE_URL or the requested URL, normalised", { requested: anything }, ({ requested }) => {
    const chosen = chooseRedirect(requested, SITE, list)
    if (chosen !== SITE) expect(chosen).toBe(new URL(requested).href)
  })

  it.prop("SITE_URL-origin URLs keep working, whatever the path", { path, port: FastCheck.constantFrom("", ":443") }, (t) => {
    expect(chooseRedirect(`https://app.example.com${t.port}${t.path}`, SITE, none)).toBe(`https://app.example.com${t.path}`)
  })

  it.prop("userinfo never gets a URL through, not even onto SITE_URL's host", {
    user: FastCheck.string({ minLength: 1, maxLength: 15 }).filter((s) => !/[/?#\\@\s]/.test(s)),
    sub: label,
    path
  }, ({ path, sub, user }) => {
    expect(chooseRedirect(`https://${user}@${sub}.preview.example.com${path}`, SITE, list)).toBe(SITE)
    expect(chooseRedirect(`https://${user}@app.example.com${path}`, SITE, list)).toBe(SITE)
  })

  it.prop("a host outside the site and the list always falls back", {
    labels: FastCheck.array(label, { minLength: 1, maxLength: 3 }),
    tld: FastCheck.constantFrom("com", "net", "evil", "example.com.evil.com"),
    path
  }, ({ labels, path, tld }) => {
    const host = `${labels.join(".")}.${tld}`
    FastCheck.pre(!host.endsWith("example.com"))
    expect(chooseRedirect(`https://${host}${path}`, SITE, list)).toBe(SITE)
  })
})

describe("allowedRedirect", () => {
  it("is what chooseRedirect honours, and undefined where it falls back", () => {
    expect(allowedRedirect("https://pr-7.preview.example.com/auth/cb", SITE, list)).toBe("https://pr-7.preview.example.com/auth/cb")
    expect(allowedRedirect(SITE, SITE, none)).toBe("https://app.example.com/")
    expect(allowedRedirect("https://evil.com/", SITE, list)).toBeUndefined()
    expect(allowedRedirect(undefined, SITE, list)).toBeUndefined()
  })
})
