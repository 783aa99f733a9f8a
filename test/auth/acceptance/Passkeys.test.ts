/**
 * Passkeys (GoTrue v2.196's /passkeys routes) over raw HTTP, with a software authenticator answering the options the
 * server sends: registration, discoverable sign-in, list, rename, delete, the admin routes, and every refusal of
 * GoTrue's tables in its order. Challenges are single use and expire; a replayed assertion is refused; the
 * PASSKEY_ENABLED gate answers before anything else.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ExpiredPasskeyChallenges } from "../../../src/auth/passkeys/ExpiredPasskeyChallenges.js"
import { ServerUrl } from "../../support/TestServer.js"
import { SoftwareAuthenticator } from "../../support/SoftwareAuthenticator.js"
import {
  acceptance,
  adminJwt,
  decodeJwt,
  legacyError,
  PASSWORD,
  raw,
  type RawRequest,
  uniqueEmail,
  versionedError
} from "./AcceptanceKit.js"

const ORIGIN = "http://localhost:3000"

const PASSKEYS_ON = {
  AUTH_PASSKEY_ENABLED: "true",
  AUTH_PASSKEY_MAX_PASSKEYS_PER_USER: "2",
  AUTH_WEBAUTHN_RP_ID: "localhost",
  AUTH_WEBAUTHN_RP_DISPLAY_NAME: "Gatehouse tests",
  AUTH_WEBAUTHN_RP_ORIGINS: ORIGIN,
  AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true"
}

const UNKNOWN_ID = "8b0c3c1e-0000-4000-8000-000000000000"

const sql = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (client) => Effect.orDie(run(client)))

const post = (path: string, body: unknown, options: RawRequest = {}) =>
  Effect.flatMap(ServerUrl, (url) => raw(url, path, { apiVersion: true, body, ...options }))

const request = (path: string, options: RawRequest = {}) =>
  Effect.flatMap(ServerUrl, (url) => raw(url, path, { apiVersion: true, ...options }))

/** A confirmed user made by the admin API, signed in with a password. */
const signedInUser = (tag: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const email = uniqueEmail(tag)
    const created = yield* post("/admin/users", { email, password: PASSWORD, email_confirm: true, ...extra }, { bearer: adminJwt() })
    expect(created.status).toBe(200)
    const token = yield* post("/token?grant_type=password", { email, password: PASSWORD })
    expect(token.status).toBe(200)
    return { id: created.json.id as string, email, token: token.json.access_token as string }
  })

const registrationOptions = (token: string) => post("/passkeys/registration/options", {}, { bearer: token })

/** Options, the authenticator's answer, and the verify call: the passkey item. */
const registerPasskey = (token: string, authenticator: SoftwareAuthenticator) =>
  Effect.gen(function*() {
    const options = yield* registrationOptions(token)
    expect(options.status).toBe(200)
    const credential = authenticator.register(ORIGIN, options.json.options)
    const verified = yield* post("/passkeys/registration/verify", { challenge_id: options.json.challenge_id, credential }, { bearer: token })
    expect(verified.status).toBe(200)
    return verified.json as { id: string; friendly_name?: string; created_at: string }
  })

const authenticationOptions = post("/passkeys/authentication/options", {})

/** A discoverable sign-in: the options, the authenticator's assertion; the verify response and what was posted. */
const signInWith = (authenticator: SoftwareAuthenticator) =>
  Effect.gen(function*() {
    const options = yield* authenticationOptions
    expect(options.status).toBe(200)
    const credential = authenticator.authenticate(ORIGIN, options.json.options)
    const body = { challenge_id: options.json.challenge_id, credential }
    return { response: yield* post("/passkeys/authentication/verify", body), body }
  })

const auditActions = (actorId: string) =>
  sql<{ action: string; traits: unknown }>((s) =>
    s`SELECT payload->>'action' AS action, payload->'traits' AS traits FROM auth.audit_log_entries
      WHERE payload->>'actor_id' = ${actorId} ORDER BY created_at`)

describe("passkeys with PASSKEY_ENABLED", () => {
  acceptance(PASSKEYS_ON)((it) => {
    it.effect("register, then a discoverable sign-in: an aal1 session with amr passkey, sign count and last use stored", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-happy", { user_metadata: { name: "Ada" } })
        const authenticator = new SoftwareAuthenticator()
        const options = yield* registrationOptions(user.token)
        expect(Object.keys(options.json)).toEqual(["challenge_id", "options", "expires_at"])
        expect(options.json.options).toMatchObject({
          rp: { name: "Gatehouse tests", id: "localhost" },
          user: { name: user.email, displayName: "Ada", id: Buffer.from(user.id).toString("base64url") },
          timeout: 300000,
          authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
          attestation: "none"
        })
        expect(options.json.options.excludeCredentials).toBeUndefined()
        expect(options.json.expires_at).toBeGreaterThan(Date.now() / 1000 + 200)
        const credential = authenticator.register(ORIGIN, options.json.options)
        const created = yield* post("/passkeys/registration/verify", { challenge_id: options.json.challenge_id, credential }, { bearer: user.token })
        expect(created.status).toBe(200)
        expect(Object.keys(created.json)).toEqual(["id", "friendly_name", "created_at"])
        expect(created.json.friendly_name).toBe("Passkey")

        const again = yield* registrationOptions(user.token)
        expect(again.json.options.excludeCredentials).toEqual([{ type: "public-key", id: credential.rawId }])

        const signInOptions = yield* authenticationOptions
        expect(signInOptions.json.options).toEqual({
          challenge: expect.any(String),
          timeout: 300000,
          rpId: "localhost",
          userVerification: "preferred"
        })
        const { response } = yield* signInWith(authenticator)
        expect(response.status).toBe(200)
        expect(response.json.user.id).toBe(user.id)
        expect(response.headers.get("sb-auth-user-id")).toBe(user.id)
        expect(response.headers.get("sb-auth-session-id")).toEqual(expect.any(String))
        const claims = decodeJwt(response.json.access_token).payload
        expect(claims["aal"]).toBe("aal1")
        expect(claims["amr"]).toEqual([{ method: "passkey", timestamp: expect.any(Number) }])
        expect(claims["session_id"]).toBe(response.headers.get("sb-auth-session-id"))
        expect(response.json.user.last_sign_in_at).toEqual(expect.any(String))

        const [stored] = yield* sql<{ sign_count: string; last_used_at: Date | null }>((s) =>
          s`SELECT sign_count::text, last_used_at FROM auth.webauthn_credentials WHERE id = ${created.json.id}`)
        expect(Number(stored!.sign_count)).toBeGreaterThan(0)
        expect(stored!.last_used_at).not.toBeNull()
        const listed = yield* request("/passkeys", { bearer: response.json.access_token })
        expect(listed.json).toEqual([{ id: created.json.id, friendly_name: "Passkey", created_at: created.json.created_at, last_used_at: expect.any(String) }])

        const actions = yield* auditActions(user.id)
        expect(actions.map((a) => a.action)).toEqual(expect.arrayContaining(["passkey_created", "login"]))
        expect(actions.filter((a) => a.action === "login").at(-1)!.traits).toEqual({ passkey_id: created.json.id })
        // Both challenges were consumed.
        const [left] = yield* sql<{ n: number }>((s) =>
          s`SELECT count(*)::int AS n FROM auth.webauthn_challenges WHERE id IN (${options.json.challenge_id}, ${signInOptions.json.challenge_id})`)
        expect(left!.n).toBe(1)
      }))

    it.effect("a challenge is single use; a replayed assertion on a fresh challenge is refused; an expired challenge is refused and gone", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-replay")
        const authenticator = new SoftwareAuthenticator()
        const options = yield* registrationOptions(user.token)
        const credential = authenticator.register(ORIGIN, options.json.options)
        const body = { challenge_id: options.json.challenge_id, credential }
        expect((yield* post("/passkeys/registration/verify", body, { bearer: user.token })).status).toBe(200)
        const replayedRegistration = yield* post("/passkeys/registration/verify", body, { bearer: user.token })
        expect(replayedRegistration.status).toBe(400)
        expect(replayedRegistration.json).toEqual(versionedError("webauthn_challenge_not_found", "Challenge not found or already used"))

        const { body: signedBody, response } = yield* signInWith(authenticator)
        expect(response.status).toBe(200)
        const sameChallenge = yield* post("/passkeys/authentication/verify", signedBody)
        expect(sameChallenge.json).toEqual(versionedError("webauthn_challenge_not_found", "Challenge not found or already used"))
        const fresh = yield* authenticationOptions
        const replayed = yield* post("/passkeys/authentication/verify", { challenge_id: fresh.json.challenge_id, credential: signedBody.credential })
        expect(replayed.status).toBe(400)
        expect(replayed.json).toEqual(versionedError("webauthn_verification_failed", "Credential verification failed"))

        // Expiry: the row's expires_at moved into the past. Refused, and consumed all the same.
        const late = yield* authenticationOptions
        yield* sql((s) => s`UPDATE auth.webauthn_challenges SET expires_at = now() - interval '1 second' WHERE id = ${late.json.challenge_id}`)
        const lateBody = { challenge_id: late.json.challenge_id, credential: authenticator.authenticate(ORIGIN, late.json.options) }
        const expired = yield* post("/passkeys/authentication/verify", lateBody)
        expect(expired.status).toBe(400)
        expect(expired.json).toEqual(versionedError("webauthn_challenge_expired", "Challenge has expired"))
        expect((yield* post("/passkeys/authentication/verify", lateBody)).json.code).toBe("webauthn_challenge_not_found")

        const lateRegistration = yield* registrationOptions(user.token)
        yield* sql((s) => s`UPDATE auth.webauthn_challenges SET expires_at = now() - interval '1 second' WHERE id = ${lateRegistration.json.challenge_id}`)
        const expiredRegistration = yield* post("/passkeys/registration/verify", {
          challenge_id: lateRegistration.json.challenge_id,
          credential: new SoftwareAuthenticator().register(ORIGIN, lateRegistration.json.options)
        }, { bearer: user.token })
        expect(expiredRegistration.json).toEqual(versionedError("webauthn_challenge_expired", "Challenge has expired"))

        // A registration challenge is not a sign-in challenge, and someone else's registration challenge is not mine.
        const other = yield* signedInUser("pk-replay-other")
        const foreign = yield* registrationOptions(user.token)
        const stolen = yield* post("/passkeys/registration/verify", {
          challenge_id: foreign.json.challenge_id,
          credential: new SoftwareAuthenticator().register(ORIGIN, foreign.json.options)
        }, { bearer: other.token })
        expect(stolen.json.code).toBe("webauthn_challenge_not_found")
        const wrongType = yield* post("/passkeys/authentication/verify", { challenge_id: foreign.json.challenge_id, credential: signedBody.credential })
        expect(wrongType.json.code).toBe("webauthn_challenge_not_found")
      }))

    it.effect("a credential already registered is 422 webauthn_credential_exists; the limit is 422 too_many_passkeys, also at verify", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-dup")
        const authenticator = new SoftwareAuthenticator()
        const first = yield* registrationOptions(user.token)
        const credential = authenticator.register(ORIGIN, first.json.options)
        expect((yield* post("/passkeys/registration/verify", { challenge_id: first.json.challenge_id, credential }, { bearer: user.token })).status).toBe(200)
        // "none" attestation signs nothing over the client data, so the same credential answers a new challenge.
        const second = yield* registrationOptions(user.token)
        const clientData = JSON.parse(Buffer.from(credential.response.clientDataJSON, "base64url").toString("utf8"))
        const resent = {
          ...credential,
          response: {
            ...credential.response,
            clientDataJSON: Buffer.from(JSON.stringify({ ...clientData, challenge: second.json.options.challenge })).toString("base64url")
          }
        }
        const duplicate = yield* post("/passkeys/registration/verify", { challenge_id: second.json.challenge_id, credential: resent }, { bearer: user.token })
        expect(duplicate.status).toBe(422)
        expect(duplicate.json).toEqual(versionedError("webauthn_credential_exists", "This credential is already registered"))
        const count = yield* sql<{ n: number }>((s) => s`SELECT count(*)::int AS n FROM auth.webauthn_credentials WHERE user_id = ${user.id}`)
        expect(count[0]!.n).toBe(1)

        // One left under the limit of 2: two ceremonies start, only the first to finish gets it.
        const a = yield* registrationOptions(user.token)
        const b = yield* registrationOptions(user.token)
        const finish = (options: typeof a) =>
          post("/passkeys/registration/verify", {
            challenge_id: options.json.challenge_id,
            credential: new SoftwareAuthenticator().register(ORIGIN, options.json.options)
          }, { bearer: user.token })
        expect((yield* finish(a)).status).toBe(200)
        const over = yield* finish(b)
        expect(over.status).toBe(422)
        expect(over.json).toEqual(versionedError("too_many_passkeys", "Maximum number of passkeys reached"))
        const atLimit = yield* registrationOptions(user.token)
        expect(atLimit.status).toBe(422)
        expect(atLimit.json).toEqual(versionedError("too_many_passkeys", "Maximum number of passkeys reached"))
      }))

    it.effect("anonymous users cannot register, SSO users get 422, and with a verified factor management needs aal2", () =>
      Effect.gen(function*() {
        const anonymous = yield* post("/signup", {})
        expect(anonymous.status).toBe(200)
        for (const path of ["/passkeys/registration/options", "/passkeys/registration/verify"]) {
          const refused = yield* post(path, {}, { bearer: anonymous.json.access_token })
          expect(refused.status).toBe(403)
          expect(refused.json).toEqual(versionedError("no_authorization", "Anonymous user not allowed to perform these actions"))
        }

        const sso = yield* signedInUser("pk-sso")
        yield* sql((s) => s`UPDATE auth.users SET is_sso_user = true WHERE id = ${sso.id}`)
        const ssoRefused = yield* registrationOptions(sso.token)
        expect(ssoRefused.status).toBe(422)
        expect(ssoRefused.json).toEqual(versionedError("validation_failed", "SSO users cannot register passkeys"))

        const mfa = yield* signedInUser("pk-mfa")
        const authenticator = new SoftwareAuthenticator()
        const passkey = yield* registerPasskey(mfa.token, authenticator)
        yield* sql((s) => s`INSERT INTO auth.mfa_factors (id, user_id, friendly_name, factor_type, status, created_at, updated_at, secret)
          VALUES (gen_random_uuid(), ${mfa.id}, 'phone app', 'totp', 'verified', now(), now(), 'OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ')`)
        const insufficient = versionedError("insufficient_aal", "AAL2 session is required to manage passkeys when MFA is enabled")
        for (const refused of [
          yield* registrationOptions(mfa.token),
          yield* post("/passkeys/registration/verify", {}, { bearer: mfa.token }),
          yield* request(`/passkeys/${passkey.id}`, { method: "DELETE", bearer: mfa.token }),
          // The AAL rule comes before the passkey is looked up.
          yield* request(`/passkeys/${UNKNOWN_ID}`, { method: "DELETE", bearer: mfa.token })
        ]) {
          expect(refused.status).toBe(403)
          expect(refused.json).toEqual(insufficient)
        }
        // Renaming and listing have no AAL rule.
        expect((yield* request(`/passkeys/${passkey.id}`, { method: "PATCH", bearer: mfa.token, body: { friendly_name: "Laptop" } })).status).toBe(200)
        expect((yield* request("/passkeys", { bearer: mfa.token })).status).toBe(200)
        // A passkey is a first factor: signing in with it is aal1, and the user still has to raise it.
        const { response } = yield* signInWith(authenticator)
        expect(response.status).toBe(200)
        expect(decodeJwt(response.json.access_token).payload["aal"]).toBe("aal1")
        expect(response.json.user.factors).toHaveLength(1)
        // An aal2 session may manage passkeys.
        const sessionId = decodeJwt(mfa.token).payload["session_id"]
        yield* sql((s) => s`UPDATE auth.sessions SET aal = 'aal2' WHERE id = ${sessionId}`)
        expect((yield* registrationOptions(mfa.token)).status).toBe(200)
        const deleted = yield* request(`/passkeys/${passkey.id}`, { method: "DELETE", bearer: mfa.token })
        expect(deleted.status).toBe(204)
      }))

    it.effect("sign-in refusals: unknown user, deleted passkey, unconfirmed email or phone, banned", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-refusals")
        const authenticator = new SoftwareAuthenticator()
        const passkey = yield* registerPasskey(user.token, authenticator)

        yield* sql((s) => s`UPDATE auth.users SET email_confirmed_at = NULL WHERE id = ${user.id}`)
        const unconfirmed = (yield* signInWith(authenticator)).response
        expect(unconfirmed.status).toBe(403)
        expect(unconfirmed.json).toEqual(versionedError("email_not_confirmed", "Email not confirmed"))
        yield* sql((s) => s`UPDATE auth.users SET email_confirmed_at = now(), phone = ${`1555${Date.now() % 10_000_000}`}, phone_confirmed_at = NULL WHERE id = ${user.id}`)
        const phone = (yield* signInWith(authenticator)).response
        expect(phone.status).toBe(403)
        expect(phone.json).toEqual(versionedError("phone_not_confirmed", "Phone not confirmed"))
        yield* sql((s) => s`UPDATE auth.users SET phone = NULL WHERE id = ${user.id}`)

        const banned = yield* request(`/admin/users/${user.id}`, { method: "PUT", bearer: adminJwt(), body: { ban_duration: "24h" } })
        expect(banned.status).toBe(200)
        const refusedBanned = (yield* signInWith(authenticator)).response
        expect(refusedBanned.status).toBe(403)
        expect(refusedBanned.json).toEqual(versionedError("user_banned", "User is banned"))
        yield* request(`/admin/users/${user.id}`, { method: "PUT", bearer: adminJwt(), body: { ban_duration: "none" } })
        expect((yield* signInWith(authenticator)).response.status).toBe(200)

        // The authenticator still holds the passkey the server forgot: no user is found, and none is created.
        const admin = yield* request(`/admin/users/${user.id}/passkeys/${passkey.id}`, { method: "DELETE", bearer: adminJwt() })
        expect(admin.status).toBe(204)
        const forgotten = (yield* signInWith(authenticator)).response
        expect(forgotten.status).toBe(400)
        expect(forgotten.json).toEqual(versionedError("webauthn_verification_failed", "Credential verification failed"))

        const gone = yield* signedInUser("pk-gone")
        const goneAuthenticator = new SoftwareAuthenticator()
        yield* registerPasskey(gone.token, goneAuthenticator)
        expect((yield* request(`/admin/users/${gone.id}`, { method: "DELETE", bearer: adminJwt(), body: {} })).status).toBe(200)
        const noUser = (yield* signInWith(goneAuthenticator)).response
        expect(noUser.json).toEqual(versionedError("webauthn_verification_failed", "Credential verification failed"))
        // The legacy envelope, for a client without X-Supabase-Api-Version.
        const options = yield* authenticationOptions
        const legacy = yield* Effect.flatMap(ServerUrl, (url) =>
          raw(url, "/passkeys/authentication/verify", {
            body: { challenge_id: options.json.challenge_id, credential: goneAuthenticator.authenticate(ORIGIN, options.json.options) }
          }))
        expect(legacy.json).toEqual(legacyError(400, "webauthn_verification_failed", "Credential verification failed"))
        expect(legacy.headers.get("x-sb-error-code")).toBe("webauthn_verification_failed")
      }))

    it.effect("list, rename and delete: names checked in bytes, someone else's passkey is 404, DELETE is 204 with no body", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-manage")
        const other = yield* signedInUser("pk-manage-other")
        expect((yield* request("/passkeys", { bearer: user.token })).json).toEqual([])
        const first = yield* registerPasskey(user.token, new SoftwareAuthenticator())
        const second = yield* registerPasskey(user.token, new SoftwareAuthenticator())
        const listed = yield* request("/passkeys/", { bearer: user.token })
        expect(listed.status).toBe(200)
        expect(listed.json.map((item: { id: string }) => item.id)).toEqual([first.id, second.id])
        expect(listed.json[0]).not.toHaveProperty("last_used_at")

        const rename = (id: string, body: unknown, token = user.token) => request(`/passkeys/${id}`, { method: "PATCH", bearer: token, body })
        const notFound = versionedError("validation_failed", "Passkey not found")
        expect((yield* rename(first.id, {})).json).toEqual(versionedError("validation_failed", "friendly_name is required"))
        expect((yield* rename(first.id, { friendly_name: "" })).status).toBe(400)
        // 61 characters, 122 bytes.
        expect((yield* rename(first.id, { friendly_name: "é".repeat(61) })).json)
          .toEqual(versionedError("validation_failed", "friendly_name must be 120 characters or less"))
        expect((yield* rename(first.id, { friendly_name: "é".repeat(60) })).status).toBe(200)
        expect((yield* rename("not-a-uuid", { friendly_name: "x" }))).toMatchObject({ status: 404, json: notFound })
        expect((yield* rename(UNKNOWN_ID, { friendly_name: "x" }))).toMatchObject({ status: 404, json: notFound })
        expect((yield* rename(first.id, { friendly_name: "x" }, other.token))).toMatchObject({ status: 404, json: notFound })
        const renamed = yield* rename(first.id, { friendly_name: "Work laptop" })
        expect(renamed.json).toEqual({ id: first.id, friendly_name: "Work laptop", created_at: first.created_at })

        expect((yield* request(`/passkeys/${first.id}`, { method: "DELETE", bearer: other.token }))).toMatchObject({ status: 404, json: notFound })
        expect((yield* request("/passkeys/nope", { method: "DELETE", bearer: user.token }))).toMatchObject({ status: 404, json: notFound })
        const deleted = yield* request(`/passkeys/${first.id}`, { method: "DELETE", bearer: user.token })
        expect(deleted.status).toBe(204)
        expect(deleted.text).toBe("")
        expect((yield* request(`/passkeys/${first.id}`, { method: "DELETE", bearer: user.token })).status).toBe(404)
        expect((yield* request("/passkeys", { bearer: user.token })).json.map((item: { id: string }) => item.id)).toEqual([second.id])
        expect((yield* auditActions(user.id)).map((a) => a.action)).toEqual(expect.arrayContaining(["passkey_created", "passkey_updated", "passkey_deleted"]))

        expect((yield* request("/passkeys")).json).toEqual(versionedError("no_authorization", "This endpoint requires a valid Bearer token"))
      }))

    it.effect("admin list and delete, audited with the admin as actor; a soft-deleted user keeps no passkey", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-admin")
        const passkey = yield* registerPasskey(user.token, new SoftwareAuthenticator())
        const listed = yield* request(`/admin/users/${user.id}/passkeys`, { bearer: adminJwt() })
        expect(listed.json).toEqual([{ id: passkey.id, friendly_name: "Passkey", created_at: passkey.created_at }])
        expect((yield* request(`/admin/users/${user.id}/passkeys`, { bearer: user.token })).status).toBe(403)
        expect((yield* request("/admin/users/nope/passkeys", { bearer: adminJwt() })).json).toEqual(versionedError("validation_failed", "user_id must be an UUID"))
        expect((yield* request(`/admin/users/${UNKNOWN_ID}/passkeys`, { bearer: adminJwt() })).json).toEqual(versionedError("user_not_found", "User not found"))
        const unknown = yield* request(`/admin/users/${user.id}/passkeys/${UNKNOWN_ID}`, { method: "DELETE", bearer: adminJwt() })
        expect(unknown).toMatchObject({ status: 404, json: versionedError("validation_failed", "Passkey not found") })
        const deleted = yield* request(`/admin/users/${user.id}/passkeys/${passkey.id}`, { method: "DELETE", bearer: adminJwt() })
        expect(deleted.status).toBe(204)
        expect(deleted.text).toBe("")
        const [entry] = yield* sql<{ actor: string; traits: unknown }>((s) =>
          s`SELECT payload->>'actor_username' AS actor, payload->'traits' AS traits FROM auth.audit_log_entries
            WHERE payload->>'action' = 'passkey_deleted' AND payload->'traits'->>'user_id' = ${user.id}`)
        expect(entry).toEqual({ actor: "service_role", traits: { user_id: user.id, passkey_id: passkey.id } })

        const soft = yield* signedInUser("pk-admin-soft")
        yield* registerPasskey(soft.token, new SoftwareAuthenticator())
        expect((yield* request(`/admin/users/${soft.id}`, { method: "DELETE", bearer: adminJwt(), body: { should_soft_delete: true } })).status).toBe(200)
        const [left] = yield* sql<{ n: number }>((s) => s`SELECT count(*)::int AS n FROM auth.webauthn_credentials WHERE user_id = ${soft.id}`)
        expect(left!.n).toBe(0)
      }))

    it.effect("the sweep deletes expired challenges and leaves live ones", () =>
      Effect.gen(function*() {
        const live = yield* authenticationOptions
        const stale = yield* authenticationOptions
        yield* sql((s) => s`UPDATE auth.webauthn_challenges SET expires_at = now() - interval '1 second' WHERE id = ${stale.json.challenge_id}`)
        const swept = yield* Effect.flatMap(ExpiredPasskeyChallenges, (sweeper) => sweeper.sweep()).pipe(
          Effect.provide(ExpiredPasskeyChallenges.Default)
        )
        expect(swept).toBeGreaterThanOrEqual(1)
        const left = yield* sql<{ id: string }>((s) =>
          s`SELECT id FROM auth.webauthn_challenges WHERE id IN (${live.json.challenge_id}, ${stale.json.challenge_id})`)
        expect(left.map((row) => row.id)).toEqual([live.json.challenge_id])
      }))

    it.effect("malformed bodies are 4xx in GoTrue's envelope, in GoTrue's order, never 500", () =>
      Effect.gen(function*() {
        const user = yield* signedInUser("pk-junk")
        const verify = (body: unknown) => post("/passkeys/authentication/verify", body)
        expect((yield* verify("{not json")).json.code).toBe("bad_json")
        expect((yield* verify({})).json).toEqual(versionedError("validation_failed", "challenge_id is required"))
        expect((yield* verify({ challenge_id: null, credential: {} })).json).toEqual(versionedError("validation_failed", "challenge_id is required"))
        expect((yield* verify({ challenge_id: "x" })).json).toEqual(versionedError("validation_failed", "credential is required"))
        expect((yield* verify({ challenge_id: "x", credential: {} })).json).toEqual(versionedError("validation_failed", "challenge_id must be a valid UUID"))
        expect((yield* verify({ challenge_id: UNKNOWN_ID, credential: {} })).json.code).toBe("webauthn_challenge_not_found")
        for (const junk of [[], 5, "text", { challenge_id: 5 }, { challenge_id: "a\u0000b", credential: {} }]) {
          const refused = yield* verify(junk)
          expect(refused.status).toBe(400)
        }
        const invalid = versionedError("webauthn_verification_failed", "Invalid credential response")
        for (const credential of [null, "junk", 7, {}, { id: "AA", rawId: "AA", type: "public-key", response: { clientDataJSON: "bm90IGpzb24" } }]) {
          const options = yield* authenticationOptions
          expect((yield* verify({ challenge_id: options.json.challenge_id, credential })).json).toEqual(invalid)
          const registration = yield* registrationOptions(user.token)
          const refused = yield* post("/passkeys/registration/verify", { challenge_id: registration.json.challenge_id, credential }, { bearer: user.token })
          expect(refused.json).toEqual(invalid)
        }
        // Well formed but not a user's handle, or naming no user: verification failed.
        const authenticator = new SoftwareAuthenticator()
        yield* registerPasskey(user.token, authenticator)
        const options = yield* authenticationOptions
        const assertion = authenticator.authenticate(ORIGIN, options.json.options)
        const badHandle = { ...assertion, response: { ...assertion.response, userHandle: Buffer.from("not a uuid").toString("base64url") } }
        expect((yield* verify({ challenge_id: options.json.challenge_id, credential: badHandle })).json)
          .toEqual(versionedError("webauthn_verification_failed", "Credential verification failed"))
        const garbled = yield* authenticationOptions
        const signed = authenticator.authenticate(ORIGIN, garbled.json.options)
        const badSignature = { ...signed, response: { ...signed.response, signature: Buffer.from("nope").toString("base64url") } }
        expect((yield* verify({ challenge_id: garbled.json.challenge_id, credential: badSignature })).json.code).toBe("webauthn_verification_failed")

        for (const body of ["{", [], { friendly_name: 5 }, { friendly_name: "a\u0000b" }]) {
          const refused = yield* request(`/passkeys/${UNKNOWN_ID}`, { method: "PATCH", bearer: user.token, body })
          expect(refused.status).toBe(400)
        }
        // Options ignore whatever body comes.
        expect((yield* post("/passkeys/authentication/options", "{not json")).status).toBe(200)
        expect((yield* post("/passkeys/registration/options", "[1,2", { bearer: user.token })).status).toBe(200)
      }))
  })
})

describe("passkeys with PASSKEY_ENABLED off (and captcha on)", () => {
  acceptance({
    AUTH_SECURITY_CAPTCHA_ENABLED: "true",
    AUTH_SECURITY_CAPTCHA_SECRET: "captcha-secret",
    AUTH_SECURITY_CAPTCHA_VERIFY_URL: "http://127.0.0.1:9/siteverify"
  })((it) => {
    it.effect("every user route is 404 passkey_disabled before authentication and captcha; the admin routes still answer", () =>
      Effect.gen(function*() {
        const routes: ReadonlyArray<readonly [string, string]> = [
          ["POST", "/passkeys/registration/options"],
          ["POST", "/passkeys/registration/verify"],
          ["POST", "/passkeys/authentication/options"],
          ["POST", "/passkeys/authentication/verify"],
          ["GET", "/passkeys"],
          ["GET", "/passkeys/"],
          ["PATCH", `/passkeys/${UNKNOWN_ID}`],
          ["DELETE", `/passkeys/${UNKNOWN_ID}`]
        ]
        for (const [method, path] of routes) {
          const body = method === "POST" || method === "PATCH" ? {} : undefined
          const versioned = yield* request(path, { method, ...(body === undefined ? {} : { body }) })
          expect({ path, status: versioned.status, json: versioned.json }).toEqual({ path, status: 404, json: versionedError("passkey_disabled", "Passkeys are disabled") })
          const legacy = yield* Effect.flatMap(ServerUrl, (url) => raw(url, path, { method, bearer: "not-a-jwt", ...(body === undefined ? {} : { body }) }))
          expect(legacy.json).toEqual(legacyError(404, "passkey_disabled", "Passkeys are disabled"))
          expect(legacy.headers.get("x-sb-error-code")).toBe("passkey_disabled")
        }
        expect((yield* request("/auth/v1/passkeys")).json.code).toBe("passkey_disabled")
        expect((yield* request("/settings")).json.passkeys_enabled).toBe(false)
        // Password sign-in needs a captcha here; the admin API does not.
        const user = yield* post("/admin/users", { email: uniqueEmail("pk-off"), email_confirm: true }, { bearer: adminJwt() })
        expect((yield* request(`/admin/users/${user.json.id}/passkeys`, { bearer: adminJwt() })).json).toEqual([])
      }))
  })
})

describe("passkey sign-in options: captcha and the per-client limit", () => {
  acceptance({
    ...PASSKEYS_ON,
    AUTH_SECURITY_CAPTCHA_ENABLED: "true",
    AUTH_SECURITY_CAPTCHA_SECRET: "captcha-secret",
    AUTH_SECURITY_CAPTCHA_VERIFY_URL: "http://127.0.0.1:9/siteverify",
    AUTH_RATE_LIMIT_HEADER: "X-Forwarded-For",
    AUTH_RATE_LIMIT_PASSKEY: "1"
  })((it) => {
    it.effect("options need a captcha token (verify does not); RATE_LIMIT_PASSKEY refuses with 429 per client", () =>
      Effect.gen(function*() {
        const headers = { "x-forwarded-for": "203.0.113.7" }
        const missing = yield* post("/passkeys/authentication/options", {}, { headers })
        expect(missing.status).toBe(400)
        expect(missing.json).toEqual(versionedError("captcha_failed", "captcha protection: request disallowed (no captcha_token)"))
        expect((yield* post("/passkeys/authentication/verify", {}, { headers })).json.code).toBe("validation_failed")
        // An admin token skips the captcha, as in GoTrue, which leaves the limiter to count.
        const statuses: Array<number> = []
        for (let i = 0; i < 32; i++) {
          statuses.push((yield* post("/passkeys/authentication/options", {}, { headers, bearer: adminJwt() })).status)
        }
        expect(statuses.slice(0, 29).every((status) => status === 200)).toBe(true)
        expect(statuses.at(-1)).toBe(429)
        const otherClient = yield* post("/passkeys/authentication/options", {}, { headers: { "x-forwarded-for": "203.0.113.8" }, bearer: adminJwt() })
        expect(otherClient.status).toBe(200)
      }))
  })
})
