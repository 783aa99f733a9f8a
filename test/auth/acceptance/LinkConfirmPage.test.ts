/**
 * MAILER_LINK_CONFIRM_PAGE through a running server: the mailed link opens a page that spends nothing, however often
 * a mail scanner opens it (GET or HEAD); the page's one button posts the link to POST /verify/confirm, which does
 * what GET /verify does without the page, under the prefix the page was opened by; supabase-js then uses the
 * session. Off, POST /verify/confirm is 404 feature_disabled and spends nothing.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { projectClient } from "../../support/SupabaseJs.js"
import { acceptance, authClient, call, linkIn, mailTo, PASSWORD, raw, settledMail, uniqueEmail } from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"

const unescape = (text: string): string =>
  text.replaceAll("&quot;", "\"").replaceAll("&#39;", "'").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&")

/** The page's form as a browser reads it: where it posts, and its hidden fields. */
const formOf = (html: string) => {
  const action = /<form method="post" action="([^"]*)" enctype="application\/x-www-form-urlencoded">/.exec(html)?.[1]
  expect(action, "the page has one form posting url-encoded").toBeDefined()
  expect(html.match(/<form\b/g)).toHaveLength(1)
  const fields = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)].map((m) => [m[1]!, unescape(m[2]!)])
  )
  return { action: unescape(action!), fields }
}

/** Opens the page as a browser (or a scanner) would: GET, not following anything. */
const open = (page: string, headers: Record<string, string> = {}) =>
  call(async () => {
    const response = await fetch(page, { headers, redirect: "manual" })
    return { status: response.status, headers: response.headers, html: await response.text() }
  })

/** Presses the button: the form posted where its action points from the page's address. */
const press = (page: string, html: string) =>
  call(async () => {
    const { action, fields } = formOf(html)
    const response = await fetch(new URL(action, page), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields),
      redirect: "manual"
    })
    return { status: response.status, location: response.headers.get("location") ?? "", posted: new URL(action, page).pathname }
  })

const fragmentOf = (location: string) => new URLSearchParams(location.slice(location.indexOf("#") + 1))

/** Signs up by email; the confirmation mail's link, opened on the test server under `prefix`. */
const signUp = (tag: string, prefix = "") =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    expect((yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))).error).toBeNull()
    yield* settledMail
    const [mail] = yield* mailTo(email)
    const link = linkIn(mail!)
    return { email, link, page: `${url}${prefix}${link.pathname}${link.search}` }
  })

const confirmedAt = (email: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ email_confirmed_at: Date | null }>`SELECT email_confirmed_at FROM auth.users WHERE email = ${email}`, (rows) =>
      rows[0]!.email_confirmed_at))

acceptance({ AUTH_MAILER_LINK_CONFIRM_PAGE: "true", AUTH_MAILER_LOCALES: "en,de,fr", AUTH_URI_ALLOW_LIST: "com.example.app://**" })(
  "the link confirmation page",
  (it) => {
    it.effect("a scanner's GETs and HEADs spend nothing; the button spends the link once, with the session in the fragment", () =>
      Effect.gen(function*() {
        const { email, link, page } = yield* signUp("scanned")
        for (let i = 0; i < 3; i++) {
          const opened = yield* open(page)
          expect(opened.status).toBe(200)
          expect(opened.headers.get("content-type")).toBe("text/html; charset=utf-8")
          const { fields } = formOf(opened.html)
          expect(fields).toEqual(Object.fromEntries(link.searchParams))
        }
        const head = yield* call(() => fetch(page, { method: "HEAD", redirect: "manual" }))
        expect(head.status).toBe(200)
        expect(yield* confirmedAt(email)).toBeNull()

        const page1 = yield* open(page)
        const pressed = yield* press(page, page1.html)
        expect(pressed.posted).toBe("/verify/confirm")
        expect(pressed.status).toBe(303)
        expect(pressed.location.startsWith(`${SITE_URL}/#access_token=`)).toBe(true)
        expect(pressed.location).toMatch(/&token_type=bearer&type=signup&sb=$/)
        expect(yield* confirmedAt(email)).not.toBeNull()

        // Spent: the page still opens (it knows nothing), and pressing again is GET /verify's error.
        const again = yield* press(page, (yield* open(page)).html)
        expect(again.status).toBe(303)
        expect(again.location).toBe(
          `${SITE_URL}/#error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired&sb=`
        )
      }))

    it.effect("under /auth/v1 the form posts under /auth/v1, and supabase-js takes up the session from the redirect", () =>
      Effect.gen(function*() {
        const { email, page } = yield* signUp("prefixed", "/auth/v1")
        const opened = yield* open(page)
        expect(opened.status).toBe(200)
        const pressed = yield* press(page, opened.html)
        expect(pressed.posted).toBe("/auth/v1/verify/confirm")
        expect(pressed.status).toBe(303)
        const fragment = fragmentOf(pressed.location)
        const supabase = yield* projectClient("anon")
        const { data, error } = yield* call(() =>
          supabase.auth.setSession({ access_token: fragment.get("access_token")!, refresh_token: fragment.get("refresh_token")! }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
        const refreshed = yield* call(() => supabase.auth.refreshSession())
        expect(refreshed.error).toBeNull()
        expect(refreshed.data.user?.email).toBe(email)
      }))

    it.effect("a PKCE link: the button's answer is the ?code= that auth-js exchanges for a session", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("pkce")
        const items = new Map<string, string>()
        const storage = {
          getItem: (key: string) => items.get(key) ?? null,
          setItem: (key: string, value: string) => void items.set(key, value),
          removeItem: (key: string) => void items.delete(key)
        }
        const { client } = authClient(url, { flowType: "pkce", persistSession: true, storage })
        expect((yield* call(() => client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: `${SITE_URL}/welcome` } }))).error)
          .toBeNull()
        yield* settledMail
        const link = linkIn((yield* mailTo(email))[0]!)
        expect(link.searchParams.get("token")).toMatch(/^pkce_/)
        const page = `${url}${link.pathname}${link.search}`
        yield* open(page)
        const pressed = yield* press(page, (yield* open(page)).html)
        expect(pressed.status).toBe(303)
        const location = new URL(pressed.location)
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/welcome`)
        const exchanged = yield* call(() => client.exchangeCodeForSession(location.searchParams.get("code")!))
        expect(exchanged.error).toBeNull()
        expect(exchanged.data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
      }))

    it.effect("the page has no script, a strict CSP that lets the form's answer go on to redirect_to, and keeps nothing", () =>
      Effect.gen(function*() {
        const { page } = yield* signUp("headers")
        const opened = yield* open(page)
        expect(opened.html).not.toMatch(/<script|javascript:|\son[a-z]+=/i)
        const csp = opened.headers.get("content-security-policy")!
        expect(csp.split("; ")).toEqual([
          "default-src 'none'",
          expect.stringMatching(/^style-src 'sha256-[A-Za-z0-9+/]+=*'$/),
          `form-action 'self' ${SITE_URL}`,
          "base-uri 'none'",
          "frame-ancestors 'none'"
        ])
        expect(opened.headers.get("cache-control")).toBe("no-store")
        expect(opened.headers.get("referrer-policy")).toBe("no-referrer")
        expect(opened.headers.get("x-frame-options")).toBe("DENY")

        const url = yield* ServerUrl
        const app = yield* open(`${url}/verify?token=t&type=signup&redirect_to=${encodeURIComponent("com.example.app://callback")}`)
        expect(app.headers.get("content-security-policy")).toContain("form-action 'self' com.example.app:;")
        // A redirect_to off the allow-list goes to SITE_URL, and so may the form's answer, no further.
        const off = yield* open(`${url}/verify?token=t&type=signup&redirect_to=${encodeURIComponent("https://evil.example/x")}`)
        expect(off.headers.get("content-security-policy")).toContain(`form-action 'self' ${SITE_URL};`)
      }))

    it.effect("every value is escaped into the page", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const hostile = "\"><script>alert(1)</script><x a='"
        const query = new URLSearchParams({ token: hostile, type: "signup", redirect_to: hostile })
        const opened = yield* open(`${url}/verify?${query}`)
        expect(opened.status).toBe(200)
        expect(opened.html).not.toContain("<script")
        expect(formOf(opened.html).fields).toEqual({ token: hostile, type: "signup", redirect_to: hostile })
        // Pressing it is GET /verify's answer to a bad link: to SITE_URL, with the error.
        const pressed = yield* press(`${url}/verify?${query}`, opened.html)
        expect(pressed.status).toBe(303)
        expect(pressed.location).toMatch(new RegExp(`^${SITE_URL}/?#error=access_denied&error_code=otp_expired&`))
      }))

    it.effect("the page speaks the browser's language among MAILER_LOCALES, else the default", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const page = `${url}/verify?token=t&type=signup`
        const german = yield* open(page, { "accept-language": "de-AT,de;q=0.9,en;q=0.5" })
        expect(german.html).toContain("<html lang=\"de\">")
        expect(german.html).toContain("<button type=\"submit\">Weiter</button>")
        const french = yield* open(page, { "accept-language": "fr-CA" })
        expect(french.html).toContain("<html lang=\"fr\">")
        expect(french.html).toContain("<button type=\"submit\">Continuer</button>")
        // Spanish is built in but not offered here.
        for (const header of [{ "accept-language": "es" }, {}]) {
          const english = yield* open(page, header)
          expect(english.html).toContain("<html lang=\"en\">")
          expect(english.html).toContain("<button type=\"submit\">Continue</button>")
        }
      }))

    it.effect("POST /verify stays auth-js's verifyOtp: a link's token_hash verifies there as before", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { email, link } = yield* signUp("json")
        const { data, error } = yield* call(() =>
          authClient(url).client.verifyOtp({ token_hash: link.searchParams.get("token")!, type: "signup" }))
        expect(error).toBeNull()
        expect(data.user?.email).toBe(email)
      }))

    it.effect("a body that is not a form is read as JSON, as every other auth route's: never a 500", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        for (const [contentType, body] of [["application/json", "{\"token\":\"t\",\"type\":\"signup\"}"], ["application/json", "{"], ["text/plain", "token=t"]]) {
          const answer = yield* call(() => fetch(`${url}/verify/confirm`, { method: "POST", headers: { "content-type": contentType! }, body: body!, redirect: "manual" }))
          expect(answer.status, `${contentType} ${body}`).toBeLessThan(500)
        }
      }))
  }
)

acceptance({})("without MAILER_LINK_CONFIRM_PAGE", (it) => {
  it.effect("POST /verify/confirm is 404 feature_disabled (as the OAuth server's routes are when off), and GET /verify spends the link at once", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, link } = yield* signUp("off")
      const posted = yield* raw(url, "/verify/confirm", {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: link.search.slice(1)
      })
      expect(posted.status).toBe(404)
      expect(posted.json).toEqual({ code: 404, error_code: "feature_disabled", msg: "Link confirmation page is disabled" })
      expect(yield* confirmedAt(email)).toBeNull()
      const opened = yield* call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" }))
      expect(opened.status).toBe(303)
      expect(yield* confirmedAt(email)).not.toBeNull()
    }))
})
