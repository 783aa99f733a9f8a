/**
 * Passkeys in a real browser: chromium's own WebAuthn stack, with a virtual authenticator added through the DevTools
 * protocol (what a platform authenticator or a security key would be), answers the ceremonies supabase-js's browser
 * bundle starts from an app page on another origin. The page registers a passkey while signed in, signs out, and
 * signs in again with the passkey alone.
 *
 * The app is served at http://localhost:<port>: browsers refuse an IP address as a relying party id, so the relying
 * party is `localhost` and the page's origin is the one allowed origin. Without chromium the file skips with a test
 * whose name says why.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { adminJwt, PASSWORD, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { SelfAddressedTestServer, ServerUrl } from "../support/TestServer.js"
import { AppOrigin, Browser, BrowserLive, chromiumMissing, inPage, openPage } from "./support/Chromium.js"
import { SupabaseAppLive } from "./support/SupabaseApp.js"

declare const window: any

/** The app's origin as the browser must use it for WebAuthn: a host name, not 127.0.0.1. */
const byName = (origin: string) => origin.replace("://127.0.0.1:", "://localhost:")

const server = Layer.unwrapEffect(Effect.map(AppOrigin, (origin) =>
  SelfAddressedTestServer((url) => ({
    AUTH_SITE_URL: url,
    API_EXTERNAL_URL: url,
    AUTH_MAILER_AUTOCONFIRM: "true",
    AUTH_PASSKEY_ENABLED: "true",
    AUTH_WEBAUTHN_RP_ID: "localhost",
    AUTH_WEBAUTHN_RP_DISPLAY_NAME: "Gatehouse test",
    AUTH_WEBAUTHN_RP_ORIGINS: byName(origin)
  })))).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

if (chromiumMissing !== undefined) {
  const reason = chromiumMissing
  describe("passkeys in chromium", () => {
    it.skip(reason, () => {})
  })
} else {
  layer(Layer.mergeAll(server, BrowserLive).pipe(Layer.provideMerge(SupabaseAppLive)), { timeout: 180_000, excludeTestServices: true })(
    "passkeys in chromium, from another origin",
    (it) => {
      it.effect("registerPasskey while signed in, then signInWithPasskey alone, with chromium's virtual authenticator", () =>
        Effect.gen(function*() {
          const url = yield* ServerUrl
          const { page, problems } = yield* openPage(yield* Browser)
          // A user-verifying authenticator that keeps discoverable credentials and answers without a touch.
          const cdp = yield* Effect.promise(() => page.context().newCDPSession(page))
          yield* Effect.promise(() => cdp.send("WebAuthn.enable"))
          const { authenticatorId } = yield* Effect.promise(() => cdp.send("WebAuthn.addVirtualAuthenticator", {
            options: {
              protocol: "ctap2",
              transport: "internal",
              hasResidentKey: true,
              hasUserVerification: true,
              isUserVerified: true,
              automaticPresenceSimulation: true
            }
          }))
          const origin = byName(yield* AppOrigin)
          yield* Effect.promise(() => page.goto(origin))
          const email = uniqueEmail("passkey")
          const registered = yield* inPage(page, async ({ anonKey, email, password, url }) => {
            window.sb = window.supabase.createClient(url, anonKey, { auth: { experimental: { passkey: true } } })
            const signedUp = await window.sb.auth.signUp({ email, password })
            if (signedUp.error) return { error: `signUp: ${signedUp.error.message}` }
            const { data, error } = await window.sb.auth.registerPasskey()
            if (error) return { error: `registerPasskey: ${error.message}` }
            const listed = await window.sb.auth.passkey.list()
            await window.sb.auth.signOut()
            const { data: after } = await window.sb.auth.getSession()
            return { error: null, id: data?.id ?? null, listed: (listed.data ?? []).map((p: any) => p.id), signedOut: after.session === null }
          }, { url, anonKey: adminJwt("anon"), email, password: PASSWORD })
          expect(registered.error, problems.join("\n")).toBeNull()
          expect(registered.listed).toEqual([registered.id])
          expect(registered.signedOut).toBe(true)
          const credentials = yield* Effect.promise(() => cdp.send("WebAuthn.getCredentials", { authenticatorId }))
          expect(credentials.credentials.map((c) => c.isResidentCredential)).toEqual([true])

          const signedIn = yield* inPage(page, async () => {
            const { data, error } = await window.sb.auth.signInWithPasskey()
            const claims = data?.session ? JSON.parse(atob(data.session.access_token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))) : null
            return { error: error?.message ?? null, email: data?.user?.email ?? null, aal: claims?.aal ?? null, amr: claims?.amr?.map((a: any) => a.method) ?? null }
          }, undefined)
          expect(signedIn, problems.join("\n")).toEqual({ error: null, email, aal: "aal1", amr: ["passkey"] })
          // The authenticator counted the second use.
          const used = yield* Effect.promise(() => cdp.send("WebAuthn.getCredentials", { authenticatorId }))
          expect(used.credentials[0]!.signCount).toBeGreaterThan(credentials.credentials[0]!.signCount)
          expect(problems).toEqual([])
          yield* Effect.promise(() => page.close())
        }))
    }
  )
}
