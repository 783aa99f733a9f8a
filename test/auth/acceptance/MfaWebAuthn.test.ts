/**
 * The WebAuthn second factor over raw HTTP, as GoTrue answers it (reference §1.3–1.5, §1.12): enrolment, the
 * registration challenge and its verification (the credential stored in go-webauthn's JSON), then the login
 * challenge any of the user's keys may answer, each raising the session to aal2 with amr `mfa/webauthn`. A software
 * authenticator stands in for the security key. Then every refusal of the verify body, a replayed assertion, the
 * places Gatehouse is stricter than GoTrue, and the switches off.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Effect, Either } from "effect"
import { readGoCredential } from "../../../src/auth/webauthn/GoWebAuthnJson.js"
import { GOTRUE_ALGORITHMS } from "../../../src/auth/webauthn/WebAuthnOptions.js"
import { SoftwareAuthenticator } from "../../support/SoftwareAuthenticator.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, decodeJwt, PASSWORD, raw, type RawRequest, uniqueEmail, versionedError } from "./AcceptanceKit.js"

const ORIGIN = "http://localhost:3000"
const AAGUID = "ee882879-721c-4913-9775-3dfcce97072a"

const RP = {
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_WEBAUTHN_RP_ID: "localhost",
  AUTH_WEBAUTHN_RP_DISPLAY_NAME: "Gatehouse tests",
  AUTH_WEBAUTHN_RP_ORIGINS: ORIGIN
}

const ON = { ...RP, AUTH_MFA_WEB_AUTHN_ENROLL_ENABLED: "true", AUTH_MFA_WEB_AUTHN_VERIFY_ENABLED: "true" }

/** What auth-js adds to a challenge and a verify: never used, the RP is the server's configuration. */
const CLIENT_RP = { rpId: "evil.example", rpOrigins: ["https://evil.example"] }

interface Signed {
  readonly access_token: string
  readonly refresh_token: string
  readonly user: { readonly id: string; readonly factors?: ReadonlyArray<Record<string, unknown>> }
}

const sql = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (client) => Effect.orDie(run(client)))

const request = (path: string, options: RawRequest = {}) => Effect.flatMap(ServerUrl, (url) => raw(url, path, { apiVersion: true, ...options }))

const signUp = Effect.gen(function*() {
  const email = uniqueEmail("mfa-webauthn")
  const response = yield* request("/signup", { body: { email, password: PASSWORD } })
  expect(response.status).toBe(200)
  return { email, session: response.json as Signed }
})

const signIn = (email: string) =>
  Effect.map(request("/token?grant_type=password", { body: { email, password: PASSWORD } }), (response) => {
    expect(response.status).toBe(200)
    return response.json as Signed
  })

const enroll = (bearer: string, friendlyName: string) =>
  Effect.map(request("/factors", { bearer, body: { factor_type: "webauthn", friendly_name: friendlyName } }), (response) => {
    expect(response.status, response.text).toBe(200)
    return response.json as { id: string; type: string; friendly_name: string }
  })

const challenge = (bearer: string, factorId: string) =>
  request(`/factors/${factorId}/challenge`, { bearer, body: { factorId, webauthn: CLIENT_RP } })

const challenged = (bearer: string, factorId: string) =>
  Effect.map(challenge(bearer, factorId), (response) => {
    expect(response.status, response.text).toBe(200)
    return response.json as { id: string; type: string; expires_at: number; webauthn: { type: string; credential_options: any } }
  })

const verify = (bearer: string, factorId: string, body: Record<string, unknown>) =>
  request(`/factors/${factorId}/verify`, { bearer, body })

const answer = (challengeId: string, type: string, credentialResponse: unknown) => ({
  challenge_id: challengeId,
  webauthn: { type, credential_response: credentialResponse, ...CLIENT_RP }
})

const expectError = (response: { status: number; json: unknown; headers: Headers }, status: number, code: string, message: string) => {
  expect(response.status).toBe(status)
  expect(response.headers.get("x-sb-error-code")).toBe(code)
  expect(response.json).toMatchObject(versionedError(code, message))
}

const methods = (token: string): ReadonlyArray<string> =>
  (decodeJwt(token).payload["amr"] as ReadonlyArray<{ method: string }>).map((entry) => entry.method)

/** Enrols a key on the session and registers `authenticator` as it: the factor and the raised session. */
const registered = (bearer: string, authenticator: SoftwareAuthenticator, friendlyName = "key") =>
  Effect.gen(function*() {
    const factor = yield* enroll(bearer, friendlyName)
    const made = yield* challenged(bearer, factor.id)
    const credential = authenticator.register(ORIGIN, made.webauthn.credential_options)
    const response = yield* verify(bearer, factor.id, answer(made.id, "create", credential))
    expect(response.status, response.text).toBe(200)
    return { factor, credential, raised: response.json as Signed }
  })

const storedFactor = (factorId: string) =>
  Effect.map(
    sql<{ status: string; web_authn_credential: unknown; web_authn_aaguid: string | null; last_webauthn_challenge_data: any }>((s) =>
      s`SELECT status::text, web_authn_credential, web_authn_aaguid::text, last_webauthn_challenge_data
        FROM auth.mfa_factors WHERE id = ${factorId}`),
    (rows) => rows[0]!
  )

const challengeRows = (id: string) => sql<{ id: string }>((s) => s`SELECT id FROM auth.mfa_challenges WHERE id = ${id}`)

const failuresOf = (factorId: string) =>
  Effect.map(sql<{ failures: number }>((s) => s`SELECT failures FROM auth.mfa_factor_attempts WHERE factor_id = ${factorId}`),
    (rows) => rows[0]?.failures ?? 0)

describe("the WebAuthn second factor (issue 27)", () => {
  acceptance(ON)((it) => {
    it.effect("enrol, register (create), then a new password session raised by a login (request): aal2 with amr mfa/webauthn", () =>
      Effect.gen(function*() {
        const { email, session } = yield* signUp
        const authenticator = new SoftwareAuthenticator({ aaguid: AAGUID })
        const enrolled = yield* request("/factors", { bearer: session.access_token, body: { factor_type: "webauthn", friendly_name: "yubikey" } })
        expect(enrolled.status).toBe(200)
        expect(Object.keys(enrolled.json)).toEqual(["id", "type", "friendly_name"])
        expect(enrolled.json).toMatchObject({ type: "webauthn", friendly_name: "yubikey" })
        const factorId = enrolled.json.id as string

        const create = yield* challenge(session.access_token, factorId)
        expect(create.status).toBe(200)
        expect(Object.keys(create.json)).toEqual(["id", "type", "expires_at", "webauthn"])
        expect(create.json).toMatchObject({ type: "webauthn", webauthn: { type: "create" } })
        expect(Object.keys(create.json.webauthn)).toEqual(["type", "credential_options"])
        const options = create.json.webauthn.credential_options
        expect(Object.keys(options)).toEqual(["publicKey"])
        expect(Object.keys(options.publicKey)).toEqual(["rp", "user", "challenge", "pubKeyCredParams", "timeout", "authenticatorSelection"])
        expect(options.publicKey).toEqual({
          rp: { name: "Gatehouse tests", id: "localhost" },
          user: { name: email, displayName: email, id: Buffer.from(session.user.id).toString("base64url") },
          challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          pubKeyCredParams: GOTRUE_ALGORITHMS.map((alg) => ({ type: "public-key", alg })),
          timeout: 300000,
          authenticatorSelection: {}
        })
        const [stored] = yield* sql<{ data: any }>((s) => s`SELECT web_authn_session_data AS data FROM auth.mfa_challenges WHERE id = ${create.json.id}`)
        const sessionData = typeof stored!.data === "string" ? JSON.parse(stored!.data) : stored!.data
        expect(sessionData).toMatchObject({
          challenge: options.publicKey.challenge,
          rpId: "localhost",
          user_id: Buffer.from(session.user.id).toString("base64"),
          userVerification: ""
        })

        const credential = authenticator.register(ORIGIN, options)
        const verified = yield* verify(session.access_token, factorId, answer(create.json.id, "create", credential))
        expect(verified.status, verified.text).toBe(200)
        const raised = verified.json as Signed
        const claims = decodeJwt(raised.access_token).payload
        expect(claims["aal"]).toBe("aal2")
        expect(claims["session_id"]).toBe(decodeJwt(session.access_token).payload["session_id"])
        expect([...methods(raised.access_token)].sort()).toEqual(["mfa/webauthn", "password"])
        expect(raised.user.factors).toEqual([expect.objectContaining({
          id: factorId,
          status: "verified",
          factor_type: "webauthn",
          web_authn_aaguid: AAGUID,
          last_webauthn_challenge_data: expect.objectContaining({ type: "create" })
        })])
        expect(raised.user.factors![0]).not.toHaveProperty("web_authn_credential")

        // Stored as GoTrue stores it: go-webauthn's Credential JSON; the verified challenge is gone.
        const row = yield* storedFactor(factorId)
        expect(row.status).toBe("verified")
        expect(row.web_authn_aaguid).toBe(AAGUID)
        const read = readGoCredential(row.web_authn_credential)
        expect(Either.isRight(read)).toBe(true)
        const goCredential = Either.getOrThrow(read)
        expect(Buffer.from(goCredential.id).toString("base64url")).toBe(credential.rawId)
        expect(goCredential.transport).toEqual(["usb"])
        expect(goCredential.attestationType).toBe("none")
        expect(Buffer.from(goCredential.authenticator.aaguid).toString("hex")).toBe(AAGUID.replaceAll("-", ""))
        expect(row.last_webauthn_challenge_data).toMatchObject({
          challenge: { challenge_id: create.json.id, factor_id: factorId, web_authn_session_data: { challenge: options.publicKey.challenge } },
          type: "create",
          credential_response: { id: credential.id }
        })
        expect(yield* challengeRows(create.json.id)).toEqual([])

        // A new password session is aal1, with a verified factor to raise it.
        const later = yield* signIn(email)
        expect(decodeJwt(later.access_token).payload["aal"]).toBe("aal1")
        expect(later.user.factors).toMatchObject([{ id: factorId, status: "verified" }])

        const login = yield* challenge(later.access_token, factorId)
        expect(login.status).toBe(200)
        expect(Object.keys(login.json)).toEqual(["id", "type", "expires_at", "webauthn"])
        expect(login.json.webauthn.type).toBe("request")
        const requestOptions = login.json.webauthn.credential_options
        expect(Object.keys(requestOptions.publicKey)).toEqual(["challenge", "timeout", "rpId", "allowCredentials"])
        expect(requestOptions.publicKey).toEqual({
          challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          timeout: 300000,
          rpId: "localhost",
          allowCredentials: [{ type: "public-key", id: credential.rawId, transports: ["usb"] }]
        })
        const assertion = authenticator.authenticate(ORIGIN, requestOptions)
        const loggedIn = yield* verify(later.access_token, factorId, answer(login.json.id, "request", assertion))
        expect(loggedIn.status, loggedIn.text).toBe(200)
        const second = loggedIn.json as Signed
        expect(decodeJwt(second.access_token).payload["aal"]).toBe("aal2")
        expect([...methods(second.access_token)].sort()).toEqual(["mfa/webauthn", "password"])
        expect(yield* challengeRows(login.json.id)).toEqual([])
        const after = yield* storedFactor(factorId)
        expect(after.last_webauthn_challenge_data).toMatchObject({ challenge: { challenge_id: login.json.id }, type: "request" })
        // As GoTrue: an MFA key's sign count stays as registered.
        expect(Either.getOrThrow(readGoCredential(after.web_authn_credential)).authenticator.signCount)
          .toBe(goCredential.authenticator.signCount)

        // The spent challenge is gone; the same assertion on a new challenge answers another challenge.
        expectError(yield* verify(second.access_token, factorId, answer(login.json.id, "request", assertion)),
          422, "mfa_factor_not_found", "MFA factor with the provided challenge ID not found")
        const fresh = yield* challenged(second.access_token, factorId)
        const replayed = yield* verify(second.access_token, factorId, answer(fresh.id, "request", assertion))
        expectError(replayed, 422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
        // The new challenge is still there to be answered properly.
        const proper = yield* verify(second.access_token, factorId, answer(fresh.id, "request", authenticator.authenticate(ORIGIN, fresh.webauthn.credential_options)))
        expect(proper.status, proper.text).toBe(200)
      }))

    it.effect("verify's refusals: the webauthn body (before the challenge), a response that is none, a wrong challenge or origin", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp
        const bearer = session.access_token
        const authenticator = new SoftwareAuthenticator()
        const factor = yield* enroll(bearer, "key")
        const first = yield* challenged(bearer, factor.id)
        const unknown = randomUUID()

        // The body is judged before the challenge is looked up, as in GoTrue.
        expectError(yield* verify(bearer, factor.id, { challenge_id: unknown }), 400, "validation_failed", "WebAuthn config required")
        expectError(yield* verify(bearer, factor.id, { challenge_id: unknown, webauthn: null }), 400, "validation_failed", "WebAuthn config required")
        const notObject = yield* verify(bearer, factor.id, { challenge_id: unknown, webauthn: "create" })
        expect(notObject.status).toBe(400)
        expect(notObject.headers.get("x-sb-error-code")).toBe("bad_json")
        expectError(yield* verify(bearer, factor.id, { challenge_id: unknown, webauthn: { type: "get", credential_response: {} } }),
          400, "validation_failed", "WebAuthn type must be create or request")
        expectError(yield* verify(bearer, factor.id, { challenge_id: unknown, webauthn: { credential_response: {} } }),
          400, "validation_failed", "WebAuthn type must be create or request")
        expectError(yield* verify(bearer, factor.id, { challenge_id: unknown, webauthn: { type: "create" } }),
          400, "validation_failed", "credential_response required")
        expectError(yield* verify(bearer, factor.id, answer(unknown, "create", {})),
          422, "mfa_factor_not_found", "MFA factor with the provided challenge ID not found")

        // After the challenge: what is no credential response is a bad request (JSON null included, as Go reads it).
        for (const nothing of [null, {}, "x", [1], { id: "a", rawId: "a", type: "public-key", response: { clientDataJSON: "e30" } }]) {
          expectError(yield* verify(bearer, factor.id, answer(first.id, "create", nothing)), 400, "validation_failed", "Invalid credential_response")
        }
        expect(yield* failuresOf(factor.id)).toBe(0)

        // A registration made for another challenge, or on a page of another origin: refused as a wrong code is (GoTrue: 500).
        const second = yield* challenged(bearer, factor.id)
        const forSecond = authenticator.register(ORIGIN, second.webauthn.credential_options)
        {
          expectError(yield* verify(bearer, factor.id, answer(first.id, "create", forSecond)),
            422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
          const elsewhere = new SoftwareAuthenticator().register("http://localhost:4000", first.webauthn.credential_options)
          expectError(yield* verify(bearer, factor.id, answer(first.id, "create", elsewhere)),
            422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
          // An assertion cannot finish a registration (GoTrue would check it against the user's other keys).
          const assertionShaped = { ...forSecond, response: { clientDataJSON: forSecond.response.clientDataJSON, authenticatorData: "AAAA", signature: "AAAA" } }
          expectError(yield* verify(bearer, factor.id, answer(first.id, "request", assertionShaped)),
            422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
        }
        // Each refusal of a real response counts toward the factor's failure limit.
        expect(yield* failuresOf(factor.id)).toBe(3)
        expect((yield* storedFactor(factor.id)).status).toBe("unverified")

        // The right response on its own challenge still verifies.
        const done = yield* verify(bearer, factor.id, answer(second.id, "create", forSecond))
        expect(done.status, done.text).toBe(200)
        expect(yield* failuresOf(factor.id)).toBe(0)
        // The other challenge, once made for the unverified factor, now cannot register a second key on it.
        const again = new SoftwareAuthenticator().register(ORIGIN, first.webauthn.credential_options)
        const late = yield* verify((done.json as Signed).access_token, factor.id, answer(first.id, "create", again))
        expectError(late, 422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
      }))

    it.effect("a second key: the verified one excluded from its registration; either key answers a login; no registration on a verified factor", () =>
      Effect.gen(function*() {
        const { email, session } = yield* signUp
        const one = new SoftwareAuthenticator()
        const two = new SoftwareAuthenticator({ transports: ["nfc"] })
        const first = yield* registered(session.access_token, one, "one")
        const bearer = first.raised.access_token

        const factor = yield* enroll(bearer, "two")
        const create = yield* challenged(bearer, factor.id)
        expect(create.webauthn.credential_options.publicKey.excludeCredentials).toEqual([
          { type: "public-key", id: first.credential.rawId, transports: ["usb", "nfc"] }
        ])
        expect(Object.keys(create.webauthn.credential_options.publicKey)).toEqual(
          ["rp", "user", "challenge", "pubKeyCredParams", "timeout", "excludeCredentials", "authenticatorSelection"]
        )
        // A browser holding the excluded key refuses to register it again.
        expect(() => one.register(ORIGIN, create.webauthn.credential_options)).toThrow()
        const secondCredential = two.register(ORIGIN, create.webauthn.credential_options)
        const verified = yield* verify(bearer, factor.id, answer(create.id, "create", secondCredential))
        expect(verified.status, verified.text).toBe(200)

        // A login of either factor allows both keys, and (as in GoTrue) either may answer it.
        const later = yield* signIn(email)
        const login = yield* challenged(later.access_token, first.factor.id)
        expect(login.webauthn.credential_options.publicKey.allowCredentials).toEqual([
          { type: "public-key", id: first.credential.rawId, transports: ["usb"] },
          { type: "public-key", id: secondCredential.rawId, transports: ["nfc"] }
        ])
        const byTwo = yield* verify(later.access_token, first.factor.id,
          answer(login.id, "request", two.authenticate(ORIGIN, login.webauthn.credential_options)))
        expect(byTwo.status, byTwo.text).toBe(200)
        expect(decodeJwt((byTwo.json as Signed).access_token).payload["aal"]).toBe("aal2")

        // Beyond GoTrue: a verified factor's login challenge cannot be answered with a new registration.
        const third = yield* signIn(email)
        const loginAgain = yield* challenged(third.access_token, first.factor.id)
        const rogue = new SoftwareAuthenticator().register(ORIGIN, {
          publicKey: {
            rp: { name: "Gatehouse tests", id: "localhost" },
            user: { name: email, displayName: email, id: Buffer.from(third.user.id).toString("base64url") },
            challenge: loginAgain.webauthn.credential_options.publicKey.challenge,
            pubKeyCredParams: [{ type: "public-key", alg: -7 }],
            timeout: 300000,
            authenticatorSelection: {}
          }
        })
        const refused = yield* verify(third.access_token, first.factor.id, answer(loginAgain.id, "create", rogue))
        expectError(refused, 422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
        // Nor with another user's key.
        const stranger = yield* signUp
        const strangerKey = new SoftwareAuthenticator()
        const strangers = yield* registered(stranger.session.access_token, strangerKey)
        const strangerLogin = yield* signIn(stranger.email)
        const theirs = yield* challenged(strangerLogin.access_token, strangers.factor.id)
        const foreign = strangerKey.authenticate(ORIGIN, {
          publicKey: { ...loginAgain.webauthn.credential_options.publicKey, allowCredentials: theirs.webauthn.credential_options.publicKey.allowCredentials }
        })
        const notHers = yield* verify(third.access_token, first.factor.id, answer(loginAgain.id, "request", foreign))
        expectError(notHers, 422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")
        expect(decodeJwt(third.access_token).payload["aal"]).toBe("aal1")
      }))

    it.effect("a challenge needs a JSON body, as GoTrue's WebAuthn handler parses it", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp
        const factor = yield* enroll(session.access_token, "key")
        const response = yield* Effect.flatMap(ServerUrl, (url) =>
          raw(url, `/factors/${factor.id}/challenge`, { bearer: session.access_token, apiVersion: true, method: "POST" }))
        expect(response.status).toBe(400)
        expect(response.headers.get("x-sb-error-code")).toBe("bad_json")
      }))
  })

  acceptance({ ...RP, AUTH_MFA_WEB_AUTHN_ENROLL_ENABLED: "true" })((it) => {
    it.effect("verification switched off: the challenge is refused, and verify answers GoTrue's quirk before reading the body", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp
        const factor = yield* enroll(session.access_token, "key")
        expectError(yield* challenge(session.access_token, factor.id), 422, "mfa_webauthn_verify_not_enabled", "MFA verification is disabled for WebAuthn")
        expectError(yield* verify(session.access_token, factor.id, { challenge_id: randomUUID() }),
          422, "mfa_webauthn_enroll_not_enabled", "MFA verification is disabled for WebAuthn")
        expectError(yield* verify(session.access_token, factor.id, answer(randomUUID(), "create", {})),
          422, "mfa_webauthn_enroll_not_enabled", "MFA verification is disabled for WebAuthn")
      }))
  })

  acceptance(RP)((it) => {
    it.effect("switched off (GoTrue's default): enrolment refused", () =>
      Effect.gen(function*() {
        const { session } = yield* signUp
        expectError(yield* request("/factors", { bearer: session.access_token, body: { factor_type: "webauthn" } }),
          422, "mfa_webauthn_enroll_not_enabled", "MFA enroll is disabled for WebAuthn")
      }))
  })
})

