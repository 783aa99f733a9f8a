import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import { defaultIssuer, otpAuthUri } from "../../src/domain/OtpAuthUri.js"
import { gotrueFixtureMissing, gotrueManifest } from "../support/GoTrueFixture.js"

const mfaUser = gotrueManifest?.users.mfa_user
// The issuer make-fixture.mjs asked for; the manifest's URI is what GoTrue answered.
// The fixture's mfa_user, where the fixture is; the URI test skips without it, the others need only some account.
const FIXTURE = {
  issuer: "fixture",
  email: mfaUser?.email ?? "mfa.user@example.com",
  secret: mfaUser?.totp_secret ?? "OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ",
  uri: mfaUser?.totp_uri ?? ""
}

/**
 * An oracle for Go's escaping built another way, from encodeURIComponent: it leaves alphanumerics and `-_.!~*'()`
 * bare, Go leaves alphanumerics, `-_.~` and the mode's reserved characters bare.
 */
const goStyle = (text: string, bare: string): string =>
  encodeURIComponent(text)
    .replace(/%([0-9A-F]{2})/g, (escape, hex: string) =>
      bare.includes(String.fromCharCode(parseInt(hex, 16))) ? String.fromCharCode(parseInt(hex, 16)) : escape)
    .replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`)

const BASE32 = FastCheck.stringOf(FastCheck.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), { minLength: 32, maxLength: 32 })
// Whole code points (encodeURIComponent throws on a lone surrogate, and JSON could not carry one to GoTrue either).
const text = FastCheck.fullUnicodeString({ minLength: 1, maxLength: 24 })

describe("otpAuthUri", () => {
  it.skipIf(gotrueFixtureMissing !== undefined)("is byte for byte the URI GoTrue wrote for the fixture's mfa_user", () => {
    expect(otpAuthUri({ issuer: FIXTURE.issuer, account: FIXTURE.email, secret: FIXTURE.secret })).toStrictEqual(
      Option.some(FIXTURE.uri)
    )
  })

  it("writes a space as %20 in the label and the query, never +, and escapes Go's way", () => {
    expect(otpAuthUri({ issuer: "Acme Co", account: "a b@example.com", secret: "JBSWY3DPEHPK3PXP" })).toStrictEqual(
      Option.some("otpauth://totp/Acme%20Co:a%20b@example.com?algorithm=SHA1&digits=6&issuer=Acme%20Co&period=30&secret=JBSWY3DPEHPK3PXP")
    )
    // In the label (a whole path) only `?` of the reserved characters is escaped; in the query value (one path
    // segment) also `/`, `;` and `,`. `!*'()` and `#`, `%` and non-ASCII bytes are escaped in both.
    expect(otpAuthUri({ issuer: "a/b;c,d?e&f=g+h$i@j:k", account: "x!*'()#%é", secret: "S" })).toStrictEqual(
      Option.some(
        "otpauth://totp/a/b;c,d%3Fe&f=g+h$i@j:k:x%21%2A%27%28%29%23%25%C3%A9" +
          "?algorithm=SHA1&digits=6&issuer=a%2Fb%3Bc%2Cd%3Fe&f=g+h$i@j:k&period=30&secret=S"
      )
    )
  })

  it("is None where GoTrue's totp.Generate refuses: no issuer, or no account (a user without an email)", () => {
    expect(otpAuthUri({ issuer: "", account: FIXTURE.email, secret: FIXTURE.secret })).toStrictEqual(Option.none())
    expect(otpAuthUri({ issuer: FIXTURE.issuer, account: "", secret: FIXTURE.secret })).toStrictEqual(Option.none())
  })

  it.prop("matches an independent rendering of Go's escaping for any issuer and account", [text, text, BASE32], ([issuer, account, secret]) => {
    expect(otpAuthUri({ issuer, account, secret })).toStrictEqual(Option.some(
      `otpauth://totp/${goStyle(`${issuer}:${account}`, "$&+,/:;=@")}?algorithm=SHA1&digits=6` +
        `&issuer=${goStyle(issuer, "$&+:=@")}&period=30&secret=${secret}`
    ))
  })

  it.prop("reads back: the label decodes to issuer:account, the query's keys are sorted, issuer and secret decode", [text, text, BASE32], ([issuer, account, secret]) => {
    const uri = Option.getOrThrow(otpAuthUri({ issuer, account, secret }))
    // `?` is always escaped in the label, so the first one starts the query.
    const queryAt = uri.indexOf("?")
    expect(decodeURIComponent(uri.slice("otpauth://totp/".length, queryAt))).toBe(`${issuer}:${account}`)
    const query = /^algorithm=SHA1&digits=6&issuer=(.*)&period=30&secret=([A-Z2-7]{32})$/s.exec(uri.slice(queryAt + 1))
    expect(query).not.toBeNull()
    expect(decodeURIComponent(query![1]!)).toBe(issuer)
    expect(query![2]).toBe(secret)
    expect(uri).toMatch(/^[A-Za-z0-9\-._~$&+,/:;=@?%]*$/)
  })
})

describe("defaultIssuer", () => {
  it("is the host of SITE_URL with its port, as written: case and a default port kept, user info and path dropped", () => {
    expect(defaultIssuer("http://localhost:3000")).toStrictEqual(Option.some("localhost:3000"))
    expect(defaultIssuer("https://App.Example.com:443/welcome?x=1")).toStrictEqual(Option.some("App.Example.com:443"))
    expect(defaultIssuer("https://example.com")).toStrictEqual(Option.some("example.com"))
    expect(defaultIssuer("http://[::1]:9999/")).toStrictEqual(Option.some("[::1]:9999"))
    expect(defaultIssuer("http://user:pw@host.example:8080/a")).toStrictEqual(Option.some("host.example:8080"))
    expect(defaultIssuer("http://host.example:")).toStrictEqual(Option.some("host.example:"))
    // Go decodes escapes in a host (only a non-ASCII byte's, or %25).
    expect(defaultIssuer("http://b%C3%BCcher.example")).toStrictEqual(Option.some("bücher.example"))
  })

  it("is None where Go's url.ParseRequestURI fails (GoTrue: 500 site url is improperly formatted)", () => {
    for (const bad of [
      "",
      "://host",
      "localhost",
      "host.example/path",
      " http://leading.space",
      "http://host\n.example",
      "http://host:port/",
      "http://[::1/",
      "http://a b/",
      "http://h%41st/",
      "http://host/%zz",
      "http://us er@host/"
    ]) {
      expect(defaultIssuer(bad), bad).toStrictEqual(Option.none())
    }
  })

  it("is the empty host where the URL has no authority: otpAuthUri then refuses it, as GoTrue does", () => {
    for (const hostless of ["http:/path", "mailto:someone@example.com", "localhost:3000", "/relative", "*"]) {
      expect(defaultIssuer(hostless), hostless).toStrictEqual(Option.some(""))
    }
  })

  it.prop(
    "agrees with the WHATWG parser's host where that one changes nothing (lower-case names, no default port)",
    [FastCheck.webUrl({ validSchemes: ["http", "https"], withQueryParameters: true })],
    ([url]) => {
      expect(defaultIssuer(url)).toStrictEqual(Option.some(new URL(url).host))
    }
  )

  it.prop(
    "keeps any port and any case the operator wrote",
    [FastCheck.domain(), FastCheck.boolean(), FastCheck.integer({ min: 0, max: 65535 }), FastCheck.constantFrom("", "/", "/app?next=/home")],
    ([domain, upper, port, path]) => {
      const host = `${upper ? domain.toUpperCase() : domain}:${port}`
      expect(defaultIssuer(`https://${host}${path}`)).toStrictEqual(Option.some(host))
    }
  )
})
