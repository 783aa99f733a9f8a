/**
 * Passkeys through `@supabase/supabase-js` as an app uses them (`experimental: { passkey: true }`), with a software
 * authenticator standing in for the browser's: registerPasskey on a password session, signInWithPasskey on a fresh
 * client, the passkey list, rename and delete, the admin list and delete, and a replayed challenge refused.
 */
import { describe, expect } from "@effect/vitest"
import type { SupabaseClient } from "@supabase/supabase-js"
import { Effect, Redacted } from "effect"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { ServerUrl } from "../../support/TestServer.js"
import { withAuthenticator } from "../../support/SoftwareAuthenticator.js"
import { acceptance, adminJwt, call, decodeJwt, nowSeconds, PASSWORD, raw, signHs256, uniqueEmail } from "./AcceptanceKit.js"
import { supabaseClient } from "../../support/SupabaseJs.js"

const ORIGIN = "http://localhost:3000"


const clientWith = (key: (secret: string) => string) =>
  Effect.gen(function*() {
    const config = yield* AuthConfig
    return supabaseClient(yield* ServerUrl, key(Redacted.value(config.jwt.secret)), { experimental: { passkey: true } })
  })

const appClient = clientWith((secret) => signHs256({ iss: "supabase", role: "anon", iat: nowSeconds() }, secret))
const adminClient = clientWith(() => adminJwt())


/** A confirmed user (made by the admin API) signed in with a password on an app client. */
const signedIn = (tag: string) =>
  Effect.gen(function*() {
    const admin = yield* adminClient
    const email = uniqueEmail(tag)
    const created = yield* call(() => admin.auth.admin.createUser({ email, password: PASSWORD, email_confirm: true }))
    expect(created.error).toBeNull()
    const app = yield* appClient
    expect((yield* call(() => app.auth.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
    return { app, admin, email, id: created.data.user!.id }
  })

const registered = (app: SupabaseClient) =>
  Effect.gen(function*() {
    const { data, error } = yield* call(() => app.auth.registerPasskey())
    expect(error).toBeNull()
    return data!
  })

describe("supabase-js passkeys", () => {
  acceptance({
    AUTH_PASSKEY_ENABLED: "true",
    AUTH_WEBAUTHN_RP_ID: "localhost",
    AUTH_WEBAUTHN_RP_DISPLAY_NAME: "Gatehouse tests",
    AUTH_WEBAUTHN_RP_ORIGINS: ORIGIN
  })((it) => {
    it.effect("registerPasskey on a password session, then signInWithPasskey on a fresh client signs the same user in", () =>
      withAuthenticator(ORIGIN, () =>
        Effect.gen(function*() {
          const { app, email, id } = yield* signedIn("sjs-pk")
          const passkey = yield* registered(app)
          expect(passkey).toMatchObject({ id: expect.any(String), friendly_name: "Passkey", created_at: expect.any(String) })

          const fresh = yield* appClient
          const events: Array<string> = []
          fresh.auth.onAuthStateChange((event) => {
            events.push(event)
          })
          const { data, error } = yield* call(() => fresh.auth.signInWithPasskey())
          expect(error).toBeNull()
          expect(data!.user!.id).toBe(id)
          expect(data!.session!.user.email).toBe(email)
          expect(decodeJwt(data!.session!.access_token).payload).toMatchObject({ aal: "aal1", amr: [{ method: "passkey" }] })
          const session = yield* call(() => fresh.auth.getSession())
          expect(session.data.session?.user.id).toBe(id)
          expect(events).toContain("SIGNED_IN")
          const me = yield* call(() => fresh.auth.getUser())
          expect(me.data.user?.id).toBe(id)
          const aal = yield* call(() => fresh.auth.mfa.getAuthenticatorAssuranceLevel())
          expect(aal.data).toMatchObject({ currentLevel: "aal1", nextLevel: "aal1" })
        })))

    it.effect("passkey.list, update and delete; the admin lists and deletes a user's passkey", () =>
      Effect.gen(function*() {
        const { admin, app, id } = yield* signedIn("sjs-pk-manage")
        const first = yield* withAuthenticator(ORIGIN, () => registered(app))
        const listed = yield* call(() => app.auth.passkey.list())
        expect(listed.error).toBeNull()
        expect(listed.data).toEqual([{ id: first.id, friendly_name: "Passkey", created_at: first.created_at }])
        const renamed = yield* call(() => app.auth.passkey.update({ passkeyId: first.id, friendlyName: "My phone" }))
        expect(renamed.error).toBeNull()
        expect(renamed.data).toMatchObject({ id: first.id, friendly_name: "My phone" })
        const empty = yield* call(() => app.auth.passkey.update({ passkeyId: first.id, friendlyName: "" }))
        expect(empty.error).toMatchObject({ status: 400, code: "validation_failed" })
        const deleted = yield* call(() => app.auth.passkey.delete({ passkeyId: first.id }))
        expect(deleted.error).toBeNull()
        expect((yield* call(() => app.auth.passkey.list())).data).toEqual([])
        const missing = yield* call(() => app.auth.passkey.delete({ passkeyId: first.id }))
        expect(missing.error).toMatchObject({ status: 404, code: "validation_failed", message: "Passkey not found" })

        const second = yield* withAuthenticator(ORIGIN, () => registered(app))
        const adminListed = yield* call(() => admin.auth.admin.passkey.listPasskeys({ userId: id }))
        expect(adminListed.error).toBeNull()
        expect(adminListed.data).toEqual([{ id: second.id, friendly_name: "Passkey", created_at: second.created_at }])
        const adminDeleted = yield* call(() => admin.auth.admin.passkey.deletePasskey({ userId: id, passkeyId: second.id }))
        expect(adminDeleted.error).toBeNull()
        expect((yield* call(() => admin.auth.admin.passkey.listPasskeys({ userId: id }))).data).toEqual([])
      }))

    it.effect("a replayed challenge is refused with webauthn_challenge_not_found; a replayed assertion on a new one fails", () =>
      withAuthenticator(ORIGIN, (authenticator) =>
        Effect.gen(function*() {
          const { app, id } = yield* signedIn("sjs-pk-replay")
          yield* registered(app)
          const fresh = yield* appClient
          const started = yield* call(() => fresh.auth.passkey.startAuthentication())
          expect(started.error).toBeNull()
          const credential = authenticator.authenticate(ORIGIN, started.data!.options)
          const first = yield* call(() =>
            fresh.auth.passkey.verifyAuthentication({ challengeId: started.data!.challenge_id, credential: credential as never }))
          expect(first.error).toBeNull()
          expect(first.data!.user!.id).toBe(id)
          const replayed = yield* call(() =>
            fresh.auth.passkey.verifyAuthentication({ challengeId: started.data!.challenge_id, credential: credential as never }))
          expect(replayed.error).toMatchObject({ status: 400, code: "webauthn_challenge_not_found" })
          const another = yield* call(() => fresh.auth.passkey.startAuthentication())
          const onNew = yield* call(() =>
            fresh.auth.passkey.verifyAuthentication({ challengeId: another.data!.challenge_id, credential: credential as never }))
          expect(onNew.error).toMatchObject({ status: 400, code: "webauthn_verification_failed" })
          // The raw route agrees that the challenge is gone.
          const url = yield* ServerUrl
          const again = yield* raw(url, "/passkeys/authentication/verify", {
            apiVersion: true,
            body: { challenge_id: another.data!.challenge_id, credential }
          })
          expect(again.json.code).toBe("webauthn_challenge_not_found")
        })))
  })
})
