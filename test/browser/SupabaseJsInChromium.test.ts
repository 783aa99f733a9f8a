/**
 * supabase-js in a real browser, as an app on another origin uses it: Debian's chromium, driven by playwright-core,
 * loads a page from a second local server (another port, so another origin) with supabase-js's own browser bundle,
 * and signs up, confirms with the mailed code, signs in, refreshes and signs out against a Gatehouse test server.
 * Every call crosses origins, so CORS must grant each preflight. Then the browser follows a confirmation link, which
 * lands on the server's own page (the site URL is the server), and follows it again, which must say it was used.
 *
 * Without chromium the file skips with a test whose name says why; .ci/run installs it with apt-get.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Schedule } from "effect"
import { adminJwt, codeIn, linkIn, mailTo, PASSWORD, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { SelfAddressedTestServer, ServerUrl } from "../support/TestServer.js"
import { AppOrigin, Browser, BrowserLive, chromiumMissing, inPage, openPage } from "./support/Chromium.js"
import { SupabaseAppLive } from "./support/SupabaseApp.js"

/** The mail the server sent to an address (sent after the answer), waited for within a bound. */
const mailFor = (email: string) =>
  mailTo(email).pipe(
    Effect.filterOrFail((mails) => mails.length > 0, () => new Error(`no mail to ${email} yet`)),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`no mail to ${email} arrived`) }),
    Effect.map((mails) => mails[mails.length - 1]!),
    Effect.orDie
  )

// What the functions run in the page see (this file is compiled without the DOM's types); `window.sb` is the client
// the test made there.
declare const window: any
declare const document: any
declare const location: any

const server = SelfAddressedTestServer((url) => ({ AUTH_SITE_URL: url, API_EXTERNAL_URL: url })).pipe(
  Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
)

if (chromiumMissing !== undefined) {
  const reason = chromiumMissing
  console.warn(`test/browser: ${reason}`)
  describe("supabase-js in chromium", () => {
    it.skip(reason, () => {})
  })
} else {
  layer(Layer.mergeAll(server, SupabaseAppLive, BrowserLive), { timeout: 180_000, excludeTestServices: true })(
    "supabase-js in chromium, from another origin",
    (it) => {
      it.effect("a preflight listing apikey, as chromium sends for supabase-js, is granted to the app's origin", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const origin = yield* AppOrigin
          const response = yield* Effect.promise(() =>
            fetch(`${url}/auth/v1/signup`, {
              method: "OPTIONS",
              headers: {
                Origin: origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "apikey,authorization,content-type,x-client-info,x-supabase-api-version"
              }
            }))
          expect(response.status).toBe(204)
          expect(response.headers.get("access-control-allow-origin")).toBe(origin)
          expect(response.headers.get("access-control-allow-credentials")).toBe("true")
        }))

      it.effect("signs up, confirms with the mailed code, signs in, refreshes and signs out", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const { page, problems } = yield* openPage(yield* Browser)
          const origin = yield* AppOrigin
          yield* Effect.promise(() => page.goto(origin))
          yield* inPage(page, ({ anonKey, url }) => {
            window.sb = window.supabase.createClient(url, anonKey)
          }, { url, anonKey: adminJwt("anon") })
          const email = uniqueEmail("browser")

          const signedUp = yield* inPage(page, async ({ email, password }) => {
            const { data, error } = await window.sb.auth.signUp({ email, password })
            return { error: error?.message ?? null, email: data.user?.email ?? null, session: data.session !== null }
          }, { email, password: PASSWORD })
          expect(signedUp, problems.join("\n")).toEqual({ error: null, email, session: false })

          const code = codeIn(yield* mailFor(email))
          const verified = yield* inPage(page, async ({ code, email }) => {
            const { data, error } = await window.sb.auth.verifyOtp({ email, token: code, type: "signup" })
            const { data: stored } = await window.sb.auth.getSession()
            return { error: error?.message ?? null, email: data.user?.email ?? null, stored: stored.session?.user.email ?? null }
          }, { code, email })
          expect(verified, problems.join("\n")).toEqual({ error: null, email, stored: email })

          const signedIn = yield* inPage(page, async ({ email, password }) => {
            const { data, error } = await window.sb.auth.signInWithPassword({ email, password })
            return { error: error?.message ?? null, email: data.user?.email ?? null, access: data.session?.access_token ?? null, refresh: data.session?.refresh_token ?? null }
          }, { email, password: PASSWORD })
          expect(signedIn.error, problems.join("\n")).toBeNull()
          expect(signedIn.email).toBe(email)

          const refreshed = yield* inPage(page, async () => {
            const { data, error } = await window.sb.auth.refreshSession()
            return { error: error?.message ?? null, access: data.session?.access_token ?? null, refresh: data.session?.refresh_token ?? null }
          }, undefined)
          expect(refreshed.error).toBeNull()
          expect(refreshed.refresh).not.toBe(signedIn.refresh)
          expect(refreshed.access).not.toBeNull()

          const signedOut = yield* inPage(page, async (access) => {
            const { error } = await window.sb.auth.signOut()
            const { data } = await window.sb.auth.getSession()
            // The ended session's token is refused with session_not_found, which auth-js turns into its
            // AuthSessionMissingError only when it can read the code: from the body of a 2024-01-01 answer, which it
            // recognises by the X-Supabase-Api-Version header, so only when that header is exposed across origins.
            const after = await window.sb.auth.getUser(access)
            return { error: error?.message ?? null, session: data.session !== null, refusedWith: after.error?.name ?? null }
          }, refreshed.access)
          expect(signedOut).toEqual({ error: null, session: false, refusedWith: "AuthSessionMissingError" })

          // The admin list's pages come from X-Total-Count and Link, which a browser reads only when they are exposed.
          const listed = yield* inPage(page, async ({ serviceKey, url }) => {
            const admin = window.supabase.createClient(url, serviceKey, { auth: { persistSession: false, autoRefreshToken: false } })
            const { data, error } = await admin.auth.admin.listUsers({ page: 1, perPage: 1 })
            return { error: error?.message ?? null, users: data.users.length, total: data.total, nextPage: data.nextPage }
          }, { url, serviceKey: adminJwt() })
          expect(listed.error).toBeNull()
          expect(listed.users).toBe(1)
          expect(listed.total).toBeGreaterThanOrEqual(1)
          expect(listed.nextPage === null || listed.nextPage === 2).toBe(true)
          expect(problems).toEqual([])
          yield* Effect.promise(() => page.close())
        }))

      it.effect("a confirmation link lands on the server's page, signed in; followed again, it says the link was used", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const { page, problems } = yield* openPage(yield* Browser)
          const origin = yield* AppOrigin
          yield* Effect.promise(() => page.goto(origin))
          const email = uniqueEmail("landing")
          const signedUp = yield* inPage(page, async ({ anonKey, email, password, url }) => {
            const { error } = await window.supabase.createClient(url, anonKey).auth.signUp({ email, password })
            return error?.message ?? null
          }, { url, anonKey: adminJwt("anon"), email, password: PASSWORD })
          expect(signedUp).toBeNull()
          const link = linkIn(yield* mailFor(email))
          expect(link.origin).toBe(url)

          const view = () =>
            inPage(page, () => ({
              view: document.body.getAttribute("data-view"),
              title: document.getElementById("title").textContent,
              lead: document.getElementById("lead").textContent,
              detail: document.getElementById("detail").textContent,
              address: location.href
            }), undefined)

          yield* Effect.promise(() => page.goto(link.href))
          const first = yield* view()
          expect(first).toMatchObject({ view: "signed-in", title: "Email address confirmed", lead: `Signed in as ${email}.`, address: `${url}/` })

          yield* Effect.promise(() => page.goto(link.href))
          const again = yield* view()
          expect(again).toMatchObject({ view: "failed", title: "That did not work", lead: "This link has expired or was already used.", address: `${url}/` })
          expect(again.detail).toContain("(otp_expired)")

          yield* Effect.promise(() => page.goto(`${url}/`))
          expect(yield* view()).toMatchObject({ view: "running", title: "Gatehouse is running" })
          // A link into the open page changes only its fragment, which loads nothing: the page still reads it.
          yield* Effect.promise(() => page.goto(`${url}/#error=access_denied&error_code=flow_state_expired`))
          yield* Effect.promise(() => page.waitForFunction(() => document.body.getAttribute("data-view") === "failed"))
          expect(yield* view()).toMatchObject({ lead: "This sign-in took too long. Start it again.", address: `${url}/` })
          // Nothing on the page broke its CSP or asked for anything it could not have.
          expect(problems).toEqual([])
          yield* Effect.promise(() => page.close())
        }))
    }
  )
}
