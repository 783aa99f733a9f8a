/**
 * The WebAuthn second factor through `@supabase/supabase-js` as an app uses it, with a software authenticator as the
 * browser's: `mfa.webauthn.register` on a password session (enrol, create challenge, navigator.credentials.create,
 * verify) raises it to aal2; a fresh sign-in is aal1 with aal2 next, and `mfa.webauthn.authenticate` raises it.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { withAuthenticator } from "../../support/SoftwareAuthenticator.js"
import { acceptance, call, decodeJwt, PASSWORD, uniqueEmail } from "./AcceptanceKit.js"
import { projectClient } from "../../support/SupabaseJs.js"

const ORIGIN = "http://localhost:3000"
const WEBAUTHN = { rpId: "localhost", rpOrigins: [ORIGIN] }


const appClient = projectClient("anon")


describe("supabase-js: the WebAuthn second factor", () => {
  acceptance({
    AUTH_MAILER_AUTOCONFIRM: "true",
    AUTH_MFA_WEB_AUTHN_ENROLL_ENABLED: "true",
    AUTH_MFA_WEB_AUTHN_VERIFY_ENABLED: "true",
    AUTH_WEBAUTHN_RP_ID: "localhost",
    AUTH_WEBAUTHN_RP_ORIGINS: ORIGIN
  })((it) => {
    it.effect("mfa.webauthn.register raises the session; a new sign-in is aal1 until mfa.webauthn.authenticate", () =>
      withAuthenticator(ORIGIN, () =>
        Effect.gen(function*() {
          const app = yield* appClient
          const email = uniqueEmail("sjs-mfa-webauthn")
          expect((yield* call(() => app.auth.signUp({ email, password: PASSWORD }))).error).toBeNull()

          const registered = yield* call(() => app.auth.mfa.webauthn.register({ friendlyName: "security key", webauthn: WEBAUTHN }))
          expect(registered.error).toBeNull()
          expect(decodeJwt(registered.data!.access_token).payload["aal"]).toBe("aal2")
          const level = yield* call(() => app.auth.mfa.getAuthenticatorAssuranceLevel())
          expect(level.data).toMatchObject({ currentLevel: "aal2", nextLevel: "aal2" })
          expect(level.data!.currentAuthenticationMethods.map((entry) => (typeof entry === "string" ? entry : entry.method)).sort()).toEqual(["mfa/webauthn", "password"])
          const listed = yield* call(() => app.auth.mfa.listFactors())
          expect(listed.error).toBeNull()
          expect(listed.data!.webauthn).toMatchObject([{ friendly_name: "security key", factor_type: "webauthn", status: "verified" }])
          const factorId = listed.data!.webauthn[0]!.id

          const later = yield* appClient
          expect((yield* call(() => later.auth.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
          const low = yield* call(() => later.auth.mfa.getAuthenticatorAssuranceLevel())
          expect(low.data).toMatchObject({ currentLevel: "aal1", nextLevel: "aal2" })

          const authenticated = yield* call(() => later.auth.mfa.webauthn.authenticate({ factorId, webauthn: WEBAUTHN }))
          expect(authenticated.error).toBeNull()
          expect(decodeJwt(authenticated.data!.access_token).payload["amr"]).toEqual(
            expect.arrayContaining([expect.objectContaining({ method: "mfa/webauthn" })])
          )
          const high = yield* call(() => later.auth.mfa.getAuthenticatorAssuranceLevel())
          expect(high.data).toMatchObject({ currentLevel: "aal2", nextLevel: "aal2" })

          // At aal2 the key can be removed, which lowers the session again.
          const unenrolled = yield* call(() => later.auth.mfa.unenroll({ factorId }))
          expect(unenrolled.error).toBeNull()
          const refreshed = yield* call(() => later.auth.refreshSession())
          expect(refreshed.error).toBeNull()
          expect(decodeJwt(refreshed.data.session!.access_token).payload["aal"]).toBe("aal1")
        })))
  })
})
