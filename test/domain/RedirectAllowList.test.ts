import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { allowListEntryProblem, compileAllowList, isAllowedRedirect } from "../../src/domain/RedirectAllowList.js"
import { parseRedirectUrl } from "../../src/domain/RedirectUrl.js"

const allowed = (entries: ReadonlyArray<string>, raw: string): boolean => {
  const url = parseRedirectUrl(raw)
  return url !== undefined && isAllowedRedirect(url, compileAllowList(entries))
}

describe("isAllowedRedirect", () => {
  it.each([
    ["https://app.example.com/callback", "https://app.example.com/callback"],
    ["https://app.example.com/callback", "https://APP.example.com:443/x/../callback#frag"],
    ["https://app.example.com", "https://app.example.com"],
    ["https://app.example.com", "https://app.example.com/"],
    ["https://*.example.com", "https://a.example.com/"],
    ["https://*.example.com/**", "https://preview-42.example.com/a/b/c?x=1"],
    ["https://**.example.com/**", "https://a.b.c.example.com/"],
    ["https://app.example.com/auth/*", "https://app.example.com/auth/callback.html?next=x"],
    ["https://app.example.com/auth/**", "https://app.example.com/auth/a/b"],
    ["http://localhost:*/**", "http://localhost:54321/cb"],
    ["https://app.example.com:*/**", "https://app.example.com/cb"],
    ["https://app.example.com:8443/**", "https://app.example.com:8443/cb"],
    ["https://app.example.com:443/**", "https://app.example.com/cb"],
    ["http*://app.example.com/**", "http://app.example.com/"],
    ["io.supabase.app://login-callback/**", "io.supabase.app://login-callback/"],
    ["https://bücher.example/**", "https://xn--bcher-kva.example/"],
    ["http://127.0.0.1:*/**", "http://127.0.0.1:8080/"],
    ["http://[::1]:*/**", "http://[::1]:8080/"]
  ])("%j lets %j through", (entry, raw) => {
    expect(allowed([entry], raw)).toBe(true)
  })

  it.each([
    ["https://app.example.com/callback", "https://app.example.com/callback?x=1"],
    ["https://app.example.com/callback", "https://app.example.com/callback/more"],
    ["https://app.example.com", "https://app.example.com/callback"],
    ["https://*.example.com/**", "https://example.com/"],
    ["https://*.example.com/**", "https://evil.com/"],
    ["https://*.example.com/**", "https://example.com.evil.com/"],
    ["https://*.example.com/**", "https://evilexample.com/"],
    ["https://*.example.com/**", "https://a.b.example.com/"],
    ["https://*.example.com/**", "http://a.example.com/"],
    ["https://*.example.com/**", "https://a.example.com:8443/"],
    ["https://**.example.com/**", "https://evil.com/.example.com/"],
    ["https://app.example.com/auth/*", "https://app.example.com/auth/a/b"],
    ["https://app.example.com/auth/**", "https://app.example.com/auth"],
    ["https://app.example.com/auth/**", "https://app.example.com/auth/../admin"],
    ["https://app.example.com/auth/**", "https://app.example.com/auth/%2e%2e/admin"],
    ["https://app.example.com:8443/**", "https://app.example.com/"],
    ["http://localhost:*/**", "http://localhost.evil.com:3000/"],
    ["*://app.example.com/**", "javascript://app.example.com/%0Aalert(1)"],
    ["http://10.0.0.5:3000/**", "http://10.0.0.5:3000/"],
    ["http://**/**", "http://[2001:db8::1]/"],
    ["https://*.example.com/**", "https://a.example.com@evil.com/"],
    ["https://*.example.com/**", "https://evil.com\\@a.example.com/"]
  ])("%j keeps out %j", (entry, raw) => {
    expect(allowed([entry], raw)).toBe(false)
  })

  it("an empty list allows nothing", () => {
    expect(allowed([], "https://app.example.com/")).toBe(false)
  })

  it("any entry of several may match", () => {
    const entries = ["https://a.example.com/**", "myapp://cb/**"]
    expect(allowed(entries, "myapp://cb/x")).toBe(true)
    expect(allowed(entries, "https://a.example.com/")).toBe(true)
    expect(allowed(entries, "https://b.example.com/")).toBe(false)
  })

  const label = FastCheck.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/)
  const segment = FastCheck.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/).filter((s) => s !== "." && s !== "..")
  const path = FastCheck.array(segment, { maxLength: 5 }).map((s) => `/${s.join("/")}`)
  const query = FastCheck.option(FastCheck.stringMatching(/^[a-z0-9=&]{0,20}$/), { nil: "" }).map((q) => q === "" ? "" : `?${q}`)
  const wildcardSubdomains = compileAllowList(["https://*.example.com/**"])

  it.prop("every https://<label>.example.com/<path> matches https://*.example.com/**", { label, path, query }, (t) => {
    const url = parseRedirectUrl(`https://${t.label}.example.com${t.path}${t.query}#f`)!
    expect(isAllowedRedirect(url, wildcardSubdomains)).toBe(true)
  })

  it.prop("no host outside *.example.com matches it, however it is dressed", {
    labels: FastCheck.array(label, { minLength: 1, maxLength: 4 }),
    suffix: FastCheck.constantFrom("", ".com", ".example.com.evil.com", ".evil.com", "example.com", ".example.co"),
    path
  }, ({ labels, path, suffix }) => {
    const host = labels.join(".") + suffix
    fastCheckPre(!host.endsWith(".example.com") || host.split(".").length !== 3)
    const url = parseRedirectUrl(`https://${host}${path}`)
    if (url !== undefined) expect(isAllowedRedirect(url, wildcardSubdomains)).toBe(false)
  })

  it.prop("a trailing /** matches every deeper path, and nothing beside it", {
    base: FastCheck.array(segment, { minLength: 1, maxLength: 3 }),
    deeper: path,
    other: segment
  }, ({ base, deeper, other }) => {
    const list = compileAllowList([`https://app.example.com/${base.join("/")}/**`])
    expect(isAllowedRedirect(parseRedirectUrl(`https://app.example.com/${base.join("/")}${deeper}`)!, list)).toBe(true)
    fastCheckPre(other !== base[0])
    expect(isAllowedRedirect(parseRedirectUrl(`https://app.example.com/${other}${deeper}`)!, list)).toBe(false)
  })

  it.prop("the port is literal unless globbed", { port: FastCheck.integer({ min: 1, max: 65535 }) }, ({ port }) => {
    const url = parseRedirectUrl(`https://app.example.com:${port}/`)!
    expect(isAllowedRedirect(url, compileAllowList(["https://app.example.com:*/**"]))).toBe(true)
    expect(isAllowedRedirect(url, compileAllowList([`https://app.example.com:${port}/**`]))).toBe(true)
    expect(isAllowedRedirect(url, compileAllowList(["https://app.example.com/**"]))).toBe(port === 443)
  })
})

describe("allowListEntryProblem", () => {
  it.each([
    "https://app.example.com",
    "https://*.example.com/**",
    "http://localhost:*/**",
    "http://[::1]:3000/cb",
    "io.supabase.app://login-callback/",
    "https://app.example.com/cb?next=*#ignored"
  ])("accepts %j", (entry) => {
    expect(allowListEntryProblem(entry)).toBeUndefined()
  })

  it.each([
    "app.example.com",
    "/callback",
    "https:app.example.com",
    "https://user@app.example.com/",
    "https://app.example.com:port/",
    "https://app example.com/",
    "https://app.example.com\\cb",
    "https://exa%6Dple.com/",
    "https:///cb",
    "*"
  ])("refuses %j", (entry) => {
    expect(allowListEntryProblem(entry)).toBeTypeOf("string")
  })

  it("a refused entry is left out of the compiled list", () => {
    expect(compileAllowList(["app.example.com", "https://a.example.com"]).entries).toHaveLength(1)
  })
})

const fastCheckPre = (condition: boolean): void => {
  FastCheck.pre(condition)
}
