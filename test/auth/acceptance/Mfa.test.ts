/**
 * Issue 27's second factors over raw HTTP, as GoTrue answers them (reference §1): enrolment, challenge, verification
 * that raises the session to aal2, unenrolment and the admin's factor routes, each error row reachable from outside,
 * and Gatehouse's own guards (a failure limit per factor, a TOTP code accepted once). TOTP codes come from an
 * independent implementation (otpauth), phone codes from the embedded default's outbox. Then the same through
 * supabase-js, as an app calls it.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Effect, Redacted, Ref, Schedule } from "effect"
import * as OTPAuth from "otpauth"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { ServerUrl, SmsOutage } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  call,
  decodeJwt,
  expectingErrors,
  legacyError,
  nowSeconds,
  PASSWORD,
  raw,
  type RawRequest,
  signHs256,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"
import { projectClient } from "../../support/SupabaseJs.js"

const ENV = {
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_MFA_PHONE_ENROLL_ENABLED: "true",
  AUTH_MFA_PHONE_VERIFY_ENABLED: "true",
  AUTH_MFA_MAX_ENROLLED_FACTORS: "4",
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true"
}

/** The code an authenticator app shows for `secret`, `steps` periods from now. */
const totp = (secret: string, steps = 0): string =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 })
    .generate({ timestamp: Date.now() + steps * 30_000 })

/** A code that is not `code`. */
const wrong = (code: string): string => String((Number(code) + 1) % 1_000_000).padStart(6, "0")

interface Signed {
  readonly access_token: string
  readonly refresh_token: string
  readonly user: { readonly id: string; readonly factors?: ReadonlyArray<Record<string, unknown>> }
}

const request = (path: string, options: RawRequest = {}) => Effect.flatMap(ServerUrl, (url) => raw(url, path, options))

const signUp = (email = uniqueEmail("mfa")) =>
  Effect.map(request("/signup", { body: { email, password: PASSWORD } }), (response) => {
    expect(response.status).toBe(200)
    return { email, session: response.json as Signed }
  })

const signIn = (email: string) =>
  Effect.map(request("/token?grant_type=password", { body: { email, password: PASSWORD } }), (response) => {
    expect(response.status).toBe(200)
    return response.json as Signed
  })

const refresh = (refreshToken: string) => request("/token?grant_type=refresh_token", { body: { refresh_token: refreshToken } })

const enroll = (bearer: string, body: Record<string, unknown> = { factor_type: "totp" }) =>
  request("/factors", { bearer, body, apiVersion: true })

const enrollTotp = (bearer: string, friendlyName?: string) =>
  Effect.map(enroll(bearer, { factor_type: "totp", ...(friendlyName === undefined ? {} : { friendly_name: friendlyName }) }), (response) => {
    expect(response.status).toBe(200)
    return { id: response.json.id as string, secret: response.json.totp.secret as string }
  })

const challenge = (bearer: string, factorId: string, body: unknown = {}) =>
  request(`/factors/${factorId}/challenge`, { bearer, body, apiVersion: true })

const challengeId = (bearer: string, factorId: string, body: unknown = {}) =>
  Effect.map(challenge(bearer, factorId, body), (response) => {
    expect(response.status).toBe(200)
    return response.json.id as string
  })

const verify = (bearer: string, factorId: string, body: Record<string, unknown>, apiVersion = true) =>
  request(`/factors/${factorId}/verify`, { bearer, body, apiVersion })

/** Challenges and verifies the factor with the code `steps` periods from now: the raised session. */
const stepUp = (bearer: string, factorId: string, secret: string, steps = 0) =>
  Effect.gen(function*() {
    const id = yield* challengeId(bearer, factorId)
    const response = yield* verify(bearer, factorId, { challenge_id: id, code: totp(secret, steps) })
    expect(response.status, response.text).toBe(200)
    return response.json as Signed
  })

/** A signed-up user with a verified TOTP factor, and the aal2 session that verified it. */
const mfaUser = Effect.gen(function*() {
  const { email, session } = yield* signUp()
  const factor = yield* enrollTotp(session.access_token)
  const raised = yield* stepUp(session.access_token, factor.id, factor.secret)
  return { email, factor, raised }
})

const expectError = (response: { status: number; json: unknown; headers: Headers }, status: number, code: string, message?: string) => {
  expect(response.status).toBe(status)
  expect(response.headers.get("x-sb-error-code")).toBe(code)
  expect(response.json).toMatchObject(message === undefined ? { code } : versionedError(code, message))
}

/** The embedded default's outbox: the latest MFA code texted to `phone` (digits). */
const textedCode = (phone: string) =>
  request("/_outbox.json").pipe(
    Effect.map((response) =>
      (response.json.messages as ReadonlyArray<{ type: string; to: string; code: string }>).find((m) => m.type === "mfa" && m.to === phone)),
    Effect.filterOrFail((message) => message !== undefined, () => "not yet"),
    Effect.retry(Schedule.spaced("10 millis")),
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(`no MFA text to ${phone}`) }),
    Effect.orDie,
    Effect.map((message) => message!.code)
  )


const adminRequest = (path: string, options: RawRequest = {}) => request(path, { bearer: adminJwt(), apiVersion: true, ...options })

describe("second factors (issue 27)", () => {
  acceptance(ENV)((it) => {
    it.effect("TOTP: enroll, challenge and verify raise the session to aal2 and end the user's other aal1 sessions", () =>
      Effect.gen(function*() {
        const { email, session } = yield* signUp()
        const other = yield* signIn(email)
        const enrolled = yield* enroll(session.access_token, { factor_type: "totp", friendly_name: "phone app" })
        expect(enrolled.status).toBe(200)
        expect(Object.keys(enrolled.json)).toEqual(["id", "type", "friendly_name", "totp"])
        const { id, totp: key } = enrolled.json
        expect(enrolled.json).toMatchObject({ type: "totp", friendly_name: "phone app" })
        expect(key.secret).toMatch(/^[A-Z2-7]{32}$/)
        expect(key.uri).toBe(
          `otpauth://totp/localhost:3000:${email}?algorithm=SHA1&digits=6&issuer=localhost:3000&period=30&secret=${key.secret}`
        )
        expect(key.qr_code).toMatch(/^<svg/)

        // Listed unverified, with GoTrue's keys; the level stays aal1 until verified.
        const me = yield* request("/user", { bearer: session.access_token })
        expect(me.json.factors).toEqual([{
          id,
          created_at: expect.any(String),
          updated_at: expect.any(String),
          status: "unverified",
          friendly_name: "phone app",
          factor_type: "totp",
          phone: "",
          last_challenged_at: null
        }])

        const challenged = yield* challenge(session.access_token, id)
        expect(challenged.status).toBe(200)
        expect(Object.keys(challenged.json)).toEqual(["id", "type", "expires_at"])
        expect(challenged.json.type).toBe("totp")
        expect(Math.abs(challenged.json.expires_at - (nowSeconds() + 300))).toBeLessThanOrEqual(2)

        const bad = yield* verify(session.access_token, id, { challenge_id: challenged.json.id, code: wrong(totp(key.secret)) })
        expectError(bad, 422, "mfa_verification_failed", "Invalid TOTP code entered")
        const legacy = yield* verify(session.access_token, id, { challenge_id: challenged.json.id, code: wrong(totp(key.secret)) }, false)
        expect(legacy.json).toEqual(legacyError(422, "mfa_verification_failed", "Invalid TOTP code entered"))

        const accepted = totp(key.secret)
        const verified = yield* verify(session.access_token, id, { challenge_id: challenged.json.id, code: accepted })
        expect(verified.status).toBe(200)
        expect(verified.headers.get("sb-auth-user-id")).toBe(session.user.id)
        const raised = verified.json as Signed
        const claims = decodeJwt(raised.access_token).payload
        expect(claims["aal"]).toBe("aal2")
        expect(claims["session_id"]).toBe(decodeJwt(session.access_token).payload["session_id"])
        expect(claims["amr"].map((entry: { method: string }) => entry.method).sort()).toEqual(["password", "totp"])
        expect(raised.user.factors).toMatchObject([{ id, status: "verified", last_challenged_at: expect.any(String) }])

        // A refresh keeps aal2.
        const refreshed = yield* refresh(raised.refresh_token)
        expect(refreshed.status).toBe(200)
        expect(decodeJwt(refreshed.json.access_token).payload["aal"]).toBe("aal2")

        // A spent challenge answers as GoTrue does; the same code on a new challenge is refused (Gatehouse's replay guard).
        const again = yield* verify(refreshed.json.access_token, id, { challenge_id: challenged.json.id, code: accepted })
        expectError(again, 422, "mfa_ip_address_mismatch", "Challenge and verify IP addresses mismatch.")
        const fresh = yield* challengeId(refreshed.json.access_token, id)
        const replay = yield* verify(refreshed.json.access_token, id, { challenge_id: fresh, code: accepted })
        expectError(replay, 422, "mfa_verification_failed", "Invalid TOTP code entered")
        // The next period's code is new: accepted.
        const next = yield* verify(refreshed.json.access_token, id, { challenge_id: fresh, code: totp(key.secret, 1) })
        expect(next.status).toBe(200)

        // The user's other session, still at aal1, is gone.
        const ended = yield* request("/user", { bearer: other.access_token, apiVersion: true })
        expectError(ended, 403, "session_not_found")
        expect((yield* refresh(other.refresh_token)).status).toBe(400)

        // The token the session had before the step-up is spent: presenting it is reuse, which ends the session.
        const stale = yield* refresh(session.refresh_token)
        expect(stale.status).toBe(400)
        expect(stale.json).toMatchObject({ error_code: "refresh_token_already_used" })
      }))

    it.effect("a user with a verified factor signs in at aal1, and needs aal2 to enroll, unenroll or change the password", () =>
      Effect.gen(function*() {
        const { email, factor, raised } = yield* mfaUser
        const low = yield* signIn(email)
        expect(decodeJwt(low.access_token).payload["aal"]).toBe("aal1")
        expect(low.user.factors).toMatchObject([{ id: factor.id, status: "verified" }])

        // (A name of its own: GoTrue checks names, then caps, then the level.)
        expectError(yield* enroll(low.access_token, { factor_type: "totp", friendly_name: "second" }), 403, "insufficient_aal",
          "AAL2 required to enroll a new factor")
        expectError(yield* request(`/factors/${factor.id}`, { method: "DELETE", bearer: low.access_token, apiVersion: true }),
          422, "insufficient_aal", "AAL2 required to unenroll verified factor")
        const password = yield* request("/user", { method: "PUT", bearer: low.access_token, body: { password: "An0ther-Correct-Horse" }, apiVersion: true })
        expectError(password, 401, "insufficient_aal", "AAL2 session is required to update email or password when MFA is enabled.")
        // Metadata needs no second factor.
        expect((yield* request("/user", { method: "PUT", bearer: low.access_token, body: { data: { a: 1 } } })).status).toBe(200)

        // The session the factor raised may.
        const changed = yield* request("/user", { method: "PUT", bearer: raised.access_token, body: { password: "An0ther-Correct-Horse" } })
        expect(changed.status).toBe(200)
        const second = yield* enrollTotp(raised.access_token, "backup")
        expect(second.id).toBeDefined()
      }))

    it.effect("unenrolling: an unverified factor at aal1; a verified one at aal2, which lowers the sessions it raised", () =>
      Effect.gen(function*() {
        const { factor, raised } = yield* mfaUser
        const unverified = yield* enrollTotp(raised.access_token, "spare")
        const { session: plain } = yield* signUp()
        const own = yield* enrollTotp(plain.access_token)
        const removed = yield* request(`/factors/${own.id}`, { method: "DELETE", bearer: plain.access_token })
        expect(removed.status).toBe(200)
        expect(removed.json).toEqual({ id: own.id })

        const gone = yield* request(`/factors/${factor.id}`, { method: "DELETE", bearer: raised.access_token })
        expect(gone.json).toEqual({ id: factor.id })
        const refreshed = yield* refresh(raised.refresh_token)
        expect(refreshed.status).toBe(200)
        const claims = decodeJwt(refreshed.json.access_token).payload
        expect(claims["aal"]).toBe("aal1")
        expect(claims["amr"].map((entry: { method: string }) => entry.method)).toEqual(["password"])
        expect(refreshed.json.user.factors).toMatchObject([{ id: unverified.id, status: "unverified" }])

        // The audit log has GoTrue's entries for each step, with their traits.
        const sql = yield* SqlClient.SqlClient
        const entries = yield* sql<{ action: string; traits: Record<string, unknown> | null }>`
          SELECT payload->>'action' AS action, payload->'traits' AS traits FROM auth.audit_log_entries
          WHERE payload->>'actor_id' = ${raised.user.id} AND payload->>'log_type' = 'factor' ORDER BY created_at, id`
        const parse = (traits: unknown) => (typeof traits === "string" ? JSON.parse(traits) : traits)
        expect(entries.map((entry) => [entry.action, parse(entry.traits)])).toEqual([
          ["factor_in_progress", { factor_id: factor.id }],
          ["challenge_created", { factor_id: factor.id, factor_status: "unverified" }],
          ["verification_attempted", { challenge_id: expect.any(String), factor_id: factor.id, factor_type: "totp" }],
          ["factor_in_progress", { factor_id: unverified.id }],
          ["factor_unenrolled", { factor_id: factor.id, factor_status: "verified" }]
        ])
      }))

    it.effect("enrolment's errors, in GoTrue's order", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp()
        const bearer = session.access_token
        expectError(yield* enroll(bearer, { factor_type: "sms" }), 400, "validation_failed", "factor_type needs to be totp, phone, or webauthn")
        expectError(yield* enroll(bearer, {}), 400, "validation_failed", "factor_type needs to be totp, phone, or webauthn")
        // An empty body is the project's 400 validation_failed (GoTrue: bad_json); one that does not parse is bad_json.
        expectError(yield* request("/factors", { bearer, body: "", apiVersion: true }), 400, "validation_failed")
        expectError(yield* request("/factors", { bearer, body: "{", apiVersion: true }), 400, "bad_json")
        expectError(yield* enroll(bearer, { factor_type: "webauthn" }), 422, "mfa_webauthn_enroll_not_enabled", "MFA enroll is disabled for WebAuthn")
        expectError(yield* enroll(bearer, { factor_type: "phone" }), 400, "validation_failed", "Phone number required to enroll Phone factor")
        expectError(yield* enroll(bearer, { factor_type: "phone", phone: "+0123" }), 400, "validation_failed", "Invalid phone number format (E.164 required)")
        const legacy = yield* request("/factors", { bearer, body: { factor_type: "sms" } })
        expect(legacy.json).toEqual(legacyError(400, "validation_failed", "factor_type needs to be totp, phone, or webauthn"))

        yield* enrollTotp(bearer, "one")
        expectError(yield* enroll(bearer, { factor_type: "totp", friendly_name: "one" }), 422, "mfa_factor_name_conflict",
          "A factor with the friendly name \"one\" for this user already exists")
        yield* enrollTotp(bearer, "two")
        yield* enrollTotp(bearer, "three")
        yield* enrollTotp(bearer, "four")
        expectError(yield* enroll(bearer, { factor_type: "totp", friendly_name: "five" }), 422, "too_many_enrolled_mfa_factors",
          "Maximum number of verified factors reached, unenroll to continue")

        expectError(yield* request("/factors", { body: { factor_type: "totp" }, apiVersion: true }), 401, "no_authorization")
        const anonymous = yield* request("/signup", { body: {} })
        expect(anonymous.json.user.is_anonymous).toBe(true)
        expectError(yield* enroll(anonymous.json.access_token), 403, "no_authorization", "Anonymous user not allowed to perform these actions")
      }))

    it.effect("a factor route finds only the caller's factors, by UUID", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp()
        const { session: someone } = yield* signUp()
        const theirs = yield* enrollTotp(someone.access_token)
        const bearer = session.access_token
        for (const [method, suffix] of [["POST", "/challenge"], ["POST", "/verify"], ["DELETE", ""]] as const) {
          const body = method === "POST" ? { challenge_id: randomUUID(), code: "123456" } : undefined
          expectError(yield* request(`/factors/not-a-uuid${suffix}`, { method, bearer, body, apiVersion: true }),
            404, "validation_failed", "factor_id must be an UUID")
          expectError(yield* request(`/factors/${theirs.id}${suffix}`, { method, bearer, body, apiVersion: true }),
            404, "mfa_factor_not_found", "Factor not found")
          expectError(yield* request(`/factors/${randomUUID()}${suffix}`, { method, bearer, body, apiVersion: true }),
            404, "mfa_factor_not_found", "Factor not found")
        }
      }))

    it.effect("verification's errors: code, challenge id, unknown, foreign IP, expired", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* signUp()
        const bearer = session.access_token
        const factor = yield* enrollTotp(bearer)
        // A TOTP challenge reads no body (a phone one needs JSON).
        expect((yield* request(`/factors/${factor.id}/challenge`, { method: "POST", bearer })).status).toBe(200)
        const id = yield* challengeId(bearer, factor.id)
        expectError(yield* verify(bearer, factor.id, { challenge_id: id }), 400, "validation_failed", "Code needs to be non-empty")
        expectError(yield* verify(bearer, factor.id, { challenge_id: "nope", code: "123456" }), 400, "bad_json")
        expectError(yield* verify(bearer, factor.id, { challenge_id: randomUUID(), code: "123456" }), 422, "mfa_factor_not_found",
          "MFA factor with the provided challenge ID not found")

        // A challenge made from another address (as a proxy's header would say) is not this client's.
        const foreign = yield* challengeId(bearer, factor.id)
        yield* sql`UPDATE auth.mfa_challenges SET ip_address = '203.0.113.7' WHERE id = ${foreign}`
        expectError(yield* verify(bearer, factor.id, { challenge_id: foreign, code: totp(factor.secret) }), 422, "mfa_ip_address_mismatch")

        // Past MFA_CHALLENGE_EXPIRY_DURATION: refused, and the challenge is gone.
        yield* sql`UPDATE auth.mfa_challenges SET created_at = created_at - interval '301 seconds' WHERE id = ${id}`
        expectError(yield* verify(bearer, factor.id, { challenge_id: id, code: totp(factor.secret) }), 422, "mfa_challenge_expired",
          `MFA challenge ${id} has expired, verify against another challenge or create a new challenge.`)
        expect(yield* sql`SELECT 1 FROM auth.mfa_challenges WHERE id = ${id}`).toHaveLength(0)
        expectError(yield* verify(bearer, factor.id, { challenge_id: id, code: totp(factor.secret) }), 422, "mfa_factor_not_found")
      }))

    it.effect("a factor that took MFA_MAX_VERIFY_FAILURES wrong codes refuses even the right one until its window ends", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* signUp()
        const bearer = session.access_token
        const factor = yield* enrollTotp(bearer)
        const id = yield* challengeId(bearer, factor.id)
        for (let i = 0; i < 5; i++) {
          expectError(yield* verify(bearer, factor.id, { challenge_id: id, code: wrong(totp(factor.secret)) }), 422, "mfa_verification_failed")
        }
        const locked = yield* verify(bearer, factor.id, { challenge_id: id, code: totp(factor.secret) })
        expectError(locked, 429, "over_request_rate_limit", "Request rate limit reached")
        expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(250)
        expect(Number(locked.headers.get("retry-after"))).toBeLessThanOrEqual(300)
        // Once the window has passed, the right code works and clears the count.
        yield* sql`UPDATE auth.mfa_factor_attempts SET window_start = window_start - interval '5 minutes' WHERE factor_id = ${factor.id}`
        expect((yield* verify(bearer, factor.id, { challenge_id: id, code: totp(factor.secret) })).status).toBe(200)
        const [row] = yield* sql<{ failures: number }>`SELECT failures FROM auth.mfa_factor_attempts WHERE factor_id = ${factor.id}`
        expect(row!.failures).toBe(0)
      }))

    it.effect("phone: the code is texted in MFA_PHONE_TEMPLATE (the outbox shows it), once a minute, and raises to aal2", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* signUp()
        const bearer = session.access_token
        const phone = uniquePhone()
        const digits = phone.slice(1)
        const enrolled = yield* enroll(bearer, { factor_type: "phone", phone })
        expect(enrolled.status).toBe(200)
        expect(enrolled.json).toEqual({ id: expect.any(String), type: "phone", friendly_name: "", phone })
        const factorId = enrolled.json.id as string

        expectError(yield* request(`/factors/${factorId}/challenge`, { bearer, apiVersion: true, method: "POST" }), 400, "bad_json")
        expectError(yield* challenge(bearer, factorId, { channel: "pigeon" }), 400, "validation_failed")
        // A text that cannot be sent is the 422 every other text gets (GoTrue: 500), and stores nothing.
        const outage = yield* SmsOutage
        const undelivered = yield* expectingErrors(Ref.set(outage, true).pipe(
          Effect.zipRight(challenge(bearer, factorId, { channel: "sms" })),
          Effect.ensuring(Ref.set(outage, false))
        ))
        expectError(undelivered, 422, "sms_send_failed")
        expect(yield* sql`SELECT 1 FROM auth.mfa_challenges WHERE factor_id = ${factorId}`).toHaveLength(0)
        expect(yield* sql`SELECT 1 FROM auth.mfa_factors WHERE id = ${factorId} AND last_challenged_at IS NULL`).toHaveLength(1)
        const id = yield* challengeId(bearer, factorId, { channel: "sms" })
        const code = yield* textedCode(digits)
        expect(code).toMatch(/^\d{6}$/)
        const tooSoon = yield* challenge(bearer, factorId)
        expectError(tooSoon, 429, "over_sms_send_rate_limit")
        expect(tooSoon.json.message).toMatch(/^For security purposes, you can only request this after \d+ seconds\.$/)

        expectError(yield* verify(bearer, factorId, { challenge_id: id, code: wrong(code) }), 422, "mfa_verification_failed", "Invalid MFA Phone code entered")
        const verified = yield* verify(bearer, factorId, { challenge_id: id, code })
        expect(verified.status).toBe(200)
        const claims = decodeJwt(verified.json.access_token).payload
        expect(claims["aal"]).toBe("aal2")
        expect(claims["amr"].map((entry: { method: string }) => entry.method)).toContain("mfa/phone")
        expect(verified.json.user.factors).toMatchObject([{ id: factorId, factor_type: "phone", phone: digits, status: "verified" }])

        expectError(yield* enroll(verified.json.access_token, { factor_type: "phone", phone }), 422, "mfa_verified_factor_exists",
          "A verified phone factor already exists, unenroll the existing factor to continue")

        // At the failure limit the texted code is thrown away with its challenge.
        yield* sql`UPDATE auth.mfa_factors SET last_challenged_at = last_challenged_at - interval '2 minutes' WHERE id = ${factorId}`
        const next = yield* challengeId(verified.json.access_token, factorId)
        for (let i = 0; i < 5; i++) {
          expectError(yield* verify(verified.json.access_token, factorId, { challenge_id: next, code: "000000" }), 422, "mfa_verification_failed")
        }
        expect(yield* sql`SELECT 1 FROM auth.mfa_challenges WHERE id = ${next}`).toHaveLength(0)
      }))

    it.effect("an enrolment drops every user's abandoned factors (unverified, never challenged, past MFA_FACTOR_EXPIRY_DURATION)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session: a } = yield* signUp()
        const abandoned = yield* enrollTotp(a.access_token, "abandoned")
        const challenged = yield* enrollTotp(a.access_token, "challenged")
        yield* challengeId(a.access_token, challenged.id)
        const fresh = yield* enrollTotp(a.access_token, "fresh")
        yield* sql`UPDATE auth.mfa_factors SET created_at = created_at - interval '301 seconds'
          WHERE id IN (${abandoned.id}, ${challenged.id})`
        const { session: b } = yield* signUp()
        yield* enrollTotp(b.access_token)
        const left = yield* sql<{ id: string }>`SELECT id FROM auth.mfa_factors WHERE user_id = ${a.user.id} ORDER BY created_at`
        expect(left.map((row) => row.id).sort()).toEqual([challenged.id, fresh.id].sort())
      }))

    it.effect("admin: list (a bare array), rename, delete (no aal needed; the sessions it raised fall back to aal1)", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp()
        expect((yield* adminRequest(`/admin/users/${session.user.id}/factors`)).json).toEqual([])
        const { factor, raised } = yield* mfaUser
        const userId = raised.user.id
        const listed = yield* adminRequest(`/admin/users/${userId}/factors`)
        expect(listed.status).toBe(200)
        expect(listed.json).toMatchObject([{ id: factor.id, status: "verified", factor_type: "totp" }])

        const renamed = yield* adminRequest(`/admin/users/${userId}/factors/${factor.id}`, { method: "PUT", body: { friendly_name: "laptop", phone: "nonsense" } })
        expect(renamed.status).toBe(200)
        expect(renamed.json).toMatchObject({ id: factor.id, friendly_name: "laptop", phone: "" })

        expectError(yield* adminRequest(`/admin/users/nope/factors`), 404, "validation_failed", "user_id must be an UUID")
        expectError(yield* adminRequest(`/admin/users/${randomUUID()}/factors`), 404, "user_not_found", "User not found")
        expectError(yield* adminRequest(`/admin/users/${userId}/factors/nope`, { method: "DELETE" }), 404, "validation_failed", "factor_id must be an UUID")
        expectError(yield* adminRequest(`/admin/users/${userId}/factors/${randomUUID()}`, { method: "DELETE" }), 404, "mfa_factor_not_found", "Factor not found")
        expectError(yield* request(`/admin/users/${userId}/factors`, { bearer: raised.access_token, apiVersion: true }), 403, "not_admin")

        const deleted = yield* adminRequest(`/admin/users/${userId}/factors/${factor.id}`, { method: "DELETE" })
        expect(deleted.status).toBe(200)
        expect(deleted.json).toMatchObject({ id: factor.id, friendly_name: "laptop", status: "verified" })
        const refreshed = yield* refresh(raised.refresh_token)
        expect(decodeJwt(refreshed.json.access_token).payload["aal"]).toBe("aal1")
        expect(refreshed.json.user.factors).toBeUndefined()
      }))

    it.effect("admin user routes never touch factors silently: an update keeps them, a soft delete drops them", () =>
      Effect.gen(function*() {
        const { email, factor, raised } = yield* mfaUser
        const userId = raised.user.id
        const shown = yield* adminRequest(`/admin/users/${userId}`)
        expect(shown.json.factors).toMatchObject([{ id: factor.id, status: "verified" }])
        const updated = yield* adminRequest(`/admin/users/${userId}`, {
          method: "PUT", body: { user_metadata: { plan: "pro" }, app_metadata: { role: "x" }, email_confirm: true }
        })
        expect(updated.status, updated.text).toBe(200)
        expect(updated.json.factors).toMatchObject([{ id: factor.id, status: "verified" }])
        // A new password ends the sessions but not the factor: the next sign-in still has aal2 to reach.
        expect((yield* adminRequest(`/admin/users/${userId}`, { method: "PUT", body: { password: `${PASSWORD}-2` } })).status).toBe(200)
        const again = yield* request("/token?grant_type=password", { body: { email, password: `${PASSWORD}-2` } })
        expect(again.json.user.factors).toMatchObject([{ id: factor.id, status: "verified" }])
        const listed = yield* adminRequest("/admin/users?per_page=100&filter=" + encodeURIComponent(email))
        expect(listed.json.users.find((u: { id: string }) => u.id === userId).factors).toMatchObject([{ id: factor.id }])

        const soft = yield* adminRequest(`/admin/users/${userId}`, { method: "DELETE", body: { should_soft_delete: true } })
        expect(soft.status).toBe(200)
        expect((yield* adminRequest(`/admin/users/${userId}/factors`)).json).toEqual([])
      }))

    it.effect("admin: a phone factor's number must be E.164", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp()
        const enrolled = yield* enroll(session.access_token, { factor_type: "phone", phone: uniquePhone() })
        const path = `/admin/users/${session.user.id}/factors/${enrolled.json.id}`
        expectError(yield* adminRequest(path, { method: "PUT", body: { phone: "+0123" } }), 400, "validation_failed", "Invalid phone number format (E.164 required)")
        const phone = uniquePhone()
        expect((yield* adminRequest(path, { method: "PUT", body: { phone } })).json).toMatchObject({ phone: phone.slice(1) })
      }))

    it.effect("supabase-js: enroll, challenge, verify, assurance levels, listFactors, challengeAndVerify, unenroll, admin", () =>
      Effect.gen(function*() {
        const supabase = yield* projectClient("anon")
        const admin = yield* projectClient("service_role")
        const email = uniqueEmail("supabase-mfa")
        expect((yield* call(() => supabase.auth.signUp({ email, password: PASSWORD }))).error).toBeNull()

        const enrolled = yield* call(() => supabase.auth.mfa.enroll({ factorType: "totp", friendlyName: "app" }))
        expect(enrolled.error).toBeNull()
        const factorId = enrolled.data!.id
        expect(enrolled.data!.totp.qr_code).toMatch(/^data:image\/svg\+xml;utf-8,<svg/)
        const secret = enrolled.data!.totp.secret
        const challenged = yield* call(() => supabase.auth.mfa.challenge({ factorId }))
        expect(challenged.error).toBeNull()
        const verified = yield* call(() => supabase.auth.mfa.verify({ factorId, challengeId: challenged.data!.id, code: totp(secret) }))
        expect(verified.error).toBeNull()
        const level = yield* call(() => supabase.auth.mfa.getAuthenticatorAssuranceLevel())
        expect(level.data).toMatchObject({ currentLevel: "aal2", nextLevel: "aal2" })
        const listed = yield* call(() => supabase.auth.mfa.listFactors())
        expect(listed.data!.totp.map((f) => f.id)).toEqual([factorId])

        // A fresh sign-in: aal1 now, aal2 possible; challengeAndVerify raises it.
        const other = yield* projectClient("anon")
        expect((yield* call(() => other.auth.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
        const low = yield* call(() => other.auth.mfa.getAuthenticatorAssuranceLevel())
        expect(low.data).toMatchObject({ currentLevel: "aal1", nextLevel: "aal2" })
        const unenrollLow = yield* call(() => other.auth.mfa.unenroll({ factorId }))
        expect(unenrollLow.error).toMatchObject({ status: 422, code: "insufficient_aal" })
        const both = yield* call(() => other.auth.mfa.challengeAndVerify({ factorId, code: totp(secret, 1) }))
        expect(both.error).toBeNull()
        expect((yield* call(() => other.auth.mfa.getAuthenticatorAssuranceLevel())).data).toMatchObject({ currentLevel: "aal2", nextLevel: "aal2" })

        const spare = yield* call(() => other.auth.mfa.enroll({ factorType: "totp", friendlyName: "spare" }))
        expect(spare.error).toBeNull()
        const unenrolled = yield* call(() => other.auth.mfa.unenroll({ factorId: spare.data!.id }))
        expect(unenrolled.error).toBeNull()
        expect(unenrolled.data).toEqual({ id: spare.data!.id })

        const userId = verified.data!.user.id
        const adminList = yield* call(() => admin.auth.admin.mfa.listFactors({ userId }))
        expect(adminList.error).toBeNull()
        expect(adminList.data!.factors.map((f) => f.id)).toEqual([factorId])
        const deleted = yield* call(() => admin.auth.admin.mfa.deleteFactor({ userId, id: factorId }))
        expect(deleted.error).toBeNull()
        // auth-js 2.109 hands the answer (the deleted factor) on under data.data.
        expect(deleted.data).toMatchObject({ data: { id: factorId, status: "verified" } })
        expect((yield* call(() => admin.auth.admin.mfa.listFactors({ userId }))).data!.factors).toEqual([])
      }))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_RATE_LIMIT_HEADER: "X-Forwarded-For" })((it) => {
    const from = (ip: string) => ({ "x-forwarded-for": ip })

    it.effect("behind RATE_LIMIT_HEADER: a challenge is bound to the client's address, and challenge and verify each have a bucket", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* signUp()
        const bearer = session.access_token
        const factor = yield* enrollTotp(bearer)
        const made = yield* request(`/factors/${factor.id}/challenge`, { bearer, body: {}, headers: from("198.51.100.9") })
        expect(made.status).toBe(200)
        const [row] = yield* sql<{ ip: string }>`SELECT host(ip_address) AS ip FROM auth.mfa_challenges WHERE id = ${made.json.id}`
        expect(row!.ip).toBe("198.51.100.9")
        const elsewhere = yield* request(`/factors/${factor.id}/verify`, {
          bearer, apiVersion: true, headers: from("198.51.100.10"), body: { challenge_id: made.json.id, code: totp(factor.secret) }
        })
        expectError(elsewhere, 422, "mfa_ip_address_mismatch")

        // A header value that is no address never reaches the inet column: the connection's peer is stored instead.
        const garbage = yield* request(`/factors/${factor.id}/challenge`, { bearer, body: {}, headers: from("not-an-address") })
        expect(garbage.status).toBe(200)
        const [peer] = yield* sql<{ ip: string }>`SELECT host(ip_address) AS ip FROM auth.mfa_challenges WHERE id = ${garbage.json.id}`
        expect(["127.0.0.1", "::1", "::ffff:127.0.0.1"]).toContain(peer!.ip)

        // MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY: bursts of 30 per client.
        const client = from("198.51.100.77")
        for (let i = 0; i < 30; i++) {
          expect((yield* request(`/factors/${factor.id}/challenge`, { bearer, body: {}, headers: client })).status).toBe(200)
        }
        const limited = yield* request(`/factors/${factor.id}/challenge`, { bearer, body: {}, headers: client, apiVersion: true })
        expectError(limited, 429, "over_request_rate_limit", "Request rate limit reached")
        expect(limited.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
        // The verify bucket is its own.
        const verified = yield* request(`/factors/${factor.id}/verify`, {
          bearer, headers: from("198.51.100.9"), body: { challenge_id: made.json.id, code: totp(factor.secret) }
        })
        expect(verified.status).toBe(200)
      }))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_MFA_TOTP_VERIFY_ENABLED: "false" })((it) => {
    it.effect("switched off: phone enrolment (GoTrue's default), TOTP challenge and verify", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp()
        const bearer = session.access_token
        expectError(yield* enroll(bearer, { factor_type: "phone", phone: uniquePhone() }), 422, "mfa_phone_enroll_not_enabled", "MFA enroll is disabled for Phone")
        const factor = yield* enrollTotp(bearer)
        expectError(yield* challenge(bearer, factor.id), 422, "mfa_totp_verify_not_enabled", "MFA verification is disabled for TOTP")
        expectError(yield* verify(bearer, factor.id, { challenge_id: randomUUID(), code: "123456" }), 422, "mfa_totp_verify_not_enabled")
        // The code's presence is checked first, as in GoTrue.
        expectError(yield* verify(bearer, factor.id, { challenge_id: randomUUID() }), 400, "validation_failed", "Code needs to be non-empty")
      }))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_AUTOCONFIRM: "true" })((it) => {
    it.effect("where GoTrue answers 500, a client's mistake is a 4xx: a phone-only user, a huge issuer, a token without a session", () =>
      Effect.gen(function*() {
        // A phone-only user's TOTP names the account by the phone (GoTrue: 500 "Error generating QR Code").
        const phone = uniquePhone()
        const signedUp = yield* request("/signup", { body: { phone, password: PASSWORD } })
        expect(signedUp.status, signedUp.text).toBe(200)
        const bearer = (signedUp.json as Signed).access_token
        const enrolled = yield* enroll(bearer, { factor_type: "totp", friendly_name: "app" })
        expect(enrolled.status, enrolled.text).toBe(200)
        expect(enrolled.json.totp.uri).toContain(`:${phone.slice(1)}?`)
        // An issuer no QR code can hold.
        expectError(yield* enroll(bearer, { factor_type: "totp", friendly_name: "long", issuer: "x".repeat(4000) }),
          400, "validation_failed", "issuer is too long to fit in a QR code")
        // A token the server signed but that names no session (an app minting its own): nothing to raise.
        const config = yield* AuthConfig
        const userId = (signedUp.json as Signed).user.id
        const sessionless = signHs256({
          sub: userId, aud: "authenticated", role: "authenticated", iat: nowSeconds(), exp: nowSeconds() + 600
        }, Redacted.value(config.jwt.secret))
        expectError(yield* enroll(sessionless, { factor_type: "totp", friendly_name: "none" }), 403, "session_not_found")
        const id = yield* challengeId(bearer, enrolled.json.id)
        expectError(yield* verify(sessionless, enrolled.json.id, { challenge_id: id, code: "123456" }), 403, "session_not_found")
      }))
  })
})
