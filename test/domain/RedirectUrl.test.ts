import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseRedirectUrl } from "../../src/domain/RedirectUrl.js"

describe("parseRedirectUrl", () => {
  it("normalises what the browser normalises", () => {
    expect(parseRedirectUrl("HTTPS://App.Example.COM:443/a/../b?x=1#top")).toStrictEqual({
      href: "https://app.example.com/b?x=1#top",
      scheme: "https",
      host: "app.example.com",
      port: "",
      pathAndQuery: "/b?x=1",
      ipLiteral: false,
      loopback: false
    })
    expect(parseRedirectUrl("http://[0:0:0:0:0:0:0:1]:3000/cb")).toMatchObject({ host: "[::1]", port: "3000", ipLiteral: true, loopback: true })
    expect(parseRedirectUrl("http://127.0.0.1:54321/")).toMatchObject({ ipLiteral: true, loopback: true })
    expect(parseRedirectUrl("io.supabase.app://login-callback/")).toMatchObject({ scheme: "io.supabase.app", host: "login-callback" })
  })

  it.each([
    ["userinfo", "https://example.com@evil.com/"],
    ["userinfo with password", "https://example.com:443@evil.com/"],
    ["empty userinfo", "https://@evil.com/"],
    ["backslash for a slash", "https:\\\\evil.com/"],
    ["backslash before userinfo", "https://example.com\\@evil.com/"],
    ["backslash in the path", "https://example.com/\\evil.com"],
    ["percent-encoded host", "https://exa%6Dple.com/"],
    ["percent-encoded dot", "https://evil%2ecom/"],
    ["decimal IPv4", "http://2130706433/"],
    ["octal IPv4", "http://0177.0.0.1/"],
    ["hex IPv4", "http://0x7f000001/"],
    ["short IPv4", "http://127.1/"],
    ["decimal IPv4 on a custom scheme", "myapp://2130706433/"],
    ["out-of-range IPv4 on a custom scheme", "myapp://999.0.0.1/"],
    ["javascript:", "javascript:alert(1)"],
    ["javascript: with an authority", "javascript://example.com/%0Aalert(1)"],
    ["upper-case JavaScript", "JavaScript://example.com/%0Aalert(1)"],
    ["data:", "data:text/html,<script>alert(1)</script>"],
    ["vbscript:", "vbscript://example.com/"],
    ["protocol-relative", "//evil.com/"],
    ["scheme without slashes", "https:evil.com"],
    ["scheme with one slash", "https:/evil.com"],
    ["relative path", "/welcome"],
    ["leading space", " https://example.com/"],
    ["tab inside the scheme", "java\tscript://example.com/"],
    ["newline in the host", "https://exa\nmple.com/"],
    ["NUL", "https://example.com\u0000.evil.com/"],
    ["zero-width space", "https://exa\u200bmple.com/"],
    ["no-break space", "https://example.com/\u00a0"],
    ["empty host label", "https://.example.com/"],
    ["trailing dot", "https://example.com./"],
    ["no host", "file:///etc/passwd"],
    ["garbage", "not a url"],
    ["empty", ""]
  ])("refuses %s: %j", (_, raw) => {
    expect(parseRedirectUrl(raw)).toBeUndefined()
  })

  const label = FastCheck.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/)
  const anyString = FastCheck.oneof(
    FastCheck.string({ unit: "grapheme", maxLength: 60 }),
    FastCheck.webUrl({ withFragments: true, withQueryParameters: true }),
    FastCheck.tuple(FastCheck.constantFrom("https://", "http://", "//", "https:", "javascript:"), FastCheck.string({ maxLength: 40 }))
      .map(([a, b]) => a + b)
  )

  it.prop("whatever it accepts has no userinfo and re-parses to itself", { raw: anyString }, ({ raw }) => {
    const url = parseRedirectUrl(raw)
    if (url === undefined) return
    const again = new URL(url.href)
    expect(again.username + again.password).toBe("")
    expect(parseRedirectUrl(url.href)).toStrictEqual(url)
  })

  it.prop("a string with a control character, whitespace or a backslash is refused", {
    labels: FastCheck.array(label, { minLength: 2, maxLength: 4 }),
    bad: FastCheck.constantFrom(" ", "\t", "\n", "\r", "\u0000", "\u001f", "\u007f", "\u00a0", "\u2028", "\u200b", "\\"),
    at: FastCheck.nat()
  }, ({ at, bad, labels }) => {
    const good = `https://${labels.join(".")}/path`
    const i = at % (good.length + 1)
    expect(parseRedirectUrl(good.slice(0, i) + bad + good.slice(i))).toBeUndefined()
  })

  it.prop("a URL with userinfo is refused, whatever the user part", {
    user: FastCheck.string({ maxLength: 20 }).filter((s) => !/[/?#\\]/.test(s)),
    host: FastCheck.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join("."))
  }, ({ host, user }) => {
    expect(parseRedirectUrl(`https://${user}@${host}/`)).toBeUndefined()
  })
})
