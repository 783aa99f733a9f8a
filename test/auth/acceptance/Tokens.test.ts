/**
 * Access tokens as clients and attackers see them: the exact claim set, getClaims with HS256 (checked by the
 * server) and with an asymmetric key (checked against /.well-known/jwks.json), and the bearer checks of GET /user
 * against forged, tampered, expired and otherwise wrong tokens.
 */
import { generateKeyPairSync, randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { AuthApiError, AuthInvalidJwtError } from "@supabase/auth-js"
import { Effect, Redacted } from "effect"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  authClient,
  call,
  decodeJwt,
  legacyError,
  nowSeconds,
  PASSWORD,
  raw,
  signHs256,
  uniqueEmail,
  unsigned,
  versionedError,
  withPayload
} from "./AcceptanceKit.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** reference/gotrue-wire.md §4: exactly these, and in particular no nbf and no jti. */
const CLAIMS = ["aal", "amr", "app_metadata", "aud", "email", "exp", "iat", "is_anonymous", "iss", "phone", "role", "session_id",
  "sub", "user_metadata"]

const BAD_JWT_PREFIX = "invalid JWT: unable to parse or verify signature"

/** A new email user signed in through auth-js; its token's claims are the template for forged ones. */
const signedIn = (url: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail("claims")
    const { client, requests } = authClient(url)
    const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD, options: { data: { name: "Ada" } } }))
    expect(error).toBeNull()
    const session = data.session!
    return { client, requests, email, session, claims: decodeJwt(session.access_token).payload, userId: data.user!.id }
  })

/** The claims every test expects of a fresh password session. */
const expectGoTrueClaims = (claims: Record<string, any>, expected: { email: string; userId: string; iss: string }) => {
  expect(Object.keys(claims).sort()).toEqual(CLAIMS)
  expect(claims).toEqual({
    iss: expected.iss,
    sub: expected.userId,
    aud: "authenticated",
    exp: claims["iat"] + 3600,
    iat: expect.any(Number),
    email: expected.email,
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    // GoTrue's: the request's data with the email identity's claims merged over it.
    user_metadata: { name: "Ada", email: expected.email, email_verified: true, phone_verified: false, sub: expected.userId },
    role: "authenticated",
    aal: "aal1",
    amr: [{ method: "password", timestamp: expect.any(Number) }],
    session_id: expect.stringMatching(UUID),
    is_anonymous: false
  })
  expect(Math.abs(claims["iat"] - nowSeconds())).toBeLessThan(600)
  expect(claims["amr"][0].timestamp).toBeLessThanOrEqual(claims["iat"])
}

/** GET /user with a bearer token, in both envelopes; returns the versioned body. */
const getUserWith = (url: string, token: string) =>
  Effect.gen(function*() {
    const legacy = yield* raw(url, "/user", { bearer: token })
    const versioned = yield* raw(url, "/user", { bearer: token, apiVersion: true })
    expect(legacy.status).toBe(versioned.status)
    expect(legacy.headers.get("x-sb-error-code")).toBe(versioned.json?.code)
    expect(legacy.json).toEqual(legacyError(versioned.status, versioned.json?.code, versioned.json?.message))
    return versioned
  })

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })("HS256 tokens", (it) => {
  it.effect("the access token carries exactly GoTrue's claims; getClaims confirms an HS256 token through GET /user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, requests, email, session, claims, userId } = yield* signedIn(url)
      expect(decodeJwt(session.access_token).header).toEqual({ alg: "HS256", typ: "JWT" })
      expectGoTrueClaims(claims, { email, userId, iss: "http://localhost:9999" })
      expect(claims["session_id"]).not.toBe(userId)

      requests.length = 0
      const { data, error } = yield* call(() => client.getClaims())
      expect(error).toBeNull()
      expect(data!.claims).toEqual(claims)
      expect(data!.header).toEqual({ alg: "HS256", typ: "JWT" })
      expect(requests).toEqual([{ method: "GET", path: "/user" }])
    }))

  it.effect("getClaims of a token whose session has ended is an AuthSessionMissingError", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { session } = yield* signedIn(url)
      expect((yield* raw(url, "/logout", { method: "POST", bearer: session.access_token })).status).toBe(204)
      const { data, error } = yield* call(() => authClient(url).client.getClaims(session.access_token))
      expect(data).toBeNull()
      expect(error?.name).toBe("AuthSessionMissingError")
    }))

  it.effect("GET /user without a bearer token is a 401 no_authorization", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const none = yield* raw(url, "/user")
      expect(none.status).toBe(401)
      expect(none.json).toEqual(legacyError(401, "no_authorization", "This endpoint requires a valid Bearer token"))
      for (const header of ["Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", "token abc"]) {
        const response = yield* raw(url, "/user", { headers: { authorization: header }, apiVersion: true })
        expect(response.status).toBe(401)
        expect(response.json).toEqual(versionedError("no_authorization", "This endpoint requires a valid Bearer token"))
      }
    }))

  it.effect("forged, tampered and expired tokens are 403 bad_jwt", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const secret = Redacted.value((yield* AuthConfig).jwt.secret)
      const { claims, session } = yield* signedIn(url)
      const cases: Record<string, string> = {
        "alg none": unsigned(claims),
        "alg none, upper case": `${Buffer.from(JSON.stringify({ alg: "NONE", typ: "JWT" })).toString("base64url")}.${
          session.access_token.split(".")[1]
        }.`,
        "HS256 with a wrong secret": signHs256(claims, "not-the-server-secret-but-just-as-long-as-it"),
        "tampered payload, original signature": withPayload(session.access_token, { ...claims, role: "service_role" }),
        "tampered metadata, original signature": withPayload(session.access_token, { ...claims, app_metadata: { admin: true } }),
        "truncated signature": session.access_token.slice(0, -3),
        expired: signHs256({ ...claims, iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 }, secret),
        "not a JWT": "definitely-not-a-jwt"
      }
      for (const [name, token] of Object.entries(cases)) {
        const response = yield* getUserWith(url, token)
        expect(response.status, name).toBe(403)
        expect(response.json.code, name).toBe("bad_jwt")
        expect(response.json.message, name).toMatch(new RegExp(`^${BAD_JWT_PREFIX}`))
        const viaClient = yield* call(() => authClient(url).client.getUser(token))
        expect(viaClient.error, name).toBeInstanceOf(AuthApiError)
        expect(viaClient.error, name).toMatchObject({ status: 403, code: "bad_jwt" })
      }
      const expired = yield* getUserWith(url, cases["expired"]!)
      expect(expired.json.message).toBe("invalid JWT: unable to parse or verify signature, token has invalid claims: token is expired")
      // The genuine token still works: the checks above did not just break /user.
      expect((yield* raw(url, "/user", { bearer: session.access_token })).status).toBe(200)
      // So does one without exp, as in GoTrue (Supabase's anon and service_role keys often have none).
      const noExp = signHs256(Object.fromEntries(Object.entries(claims).filter(([key]) => key !== "exp")), secret)
      expect((yield* raw(url, "/user", { bearer: noExp })).status).toBe(200)
    }))

  it.effect("a well-signed token with a foreign audience, a bad or missing sub or an unknown user is refused", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const secret = Redacted.value((yield* AuthConfig).jwt.secret)
      const { claims } = yield* signedIn(url)

      const audience = yield* getUserWith(url, signHs256({ ...claims, aud: "some-other-project" }, secret))
      expect(audience.status).toBe(400)
      expect(audience.json).toEqual(versionedError("validation_failed", "Token audience doesn't match request audience"))

      const sub = yield* getUserWith(url, signHs256({ ...claims, sub: "1234567890" }, secret))
      expect(sub.status).toBe(400)
      expect(sub.json).toEqual(versionedError("bad_jwt", "invalid claim: sub claim must be a UUID"))

      // A project's anon key has no sub: apps call getUser with it and match on GoTrue's exact words.
      const anonKey = signHs256({ iss: "supabase", role: "anon", iat: nowSeconds(), exp: nowSeconds() + 3600 }, secret)
      const anon = yield* getUserWith(url, anonKey)
      expect(anon.status).toBe(403)
      expect(anon.json).toEqual(versionedError("bad_jwt", "invalid claim: missing sub claim"))
      const viaClient = yield* call(() => authClient(url).client.getUser(anonKey))
      expect(viaClient.error).toBeInstanceOf(AuthApiError)
      expect(viaClient.error).toMatchObject({ status: 403, code: "bad_jwt", message: "invalid claim: missing sub claim" })

      const unknown = yield* getUserWith(url, signHs256({ ...claims, sub: randomUUID() }, secret))
      expect(unknown.status).toBe(403)
      expect(unknown.json).toEqual(versionedError("user_not_found", "User from sub claim in JWT does not exist"))

      const session = yield* getUserWith(url, signHs256({ ...claims, session_id: randomUUID() }, secret))
      expect(session.status).toBe(403)
      expect(session.json).toEqual(versionedError("session_not_found", "Session from session_id claim in JWT does not exist"))
    }))

  it.effect("the token of a deleted session is a 403 session_not_found", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { claims, session } = yield* signedIn(url)
      yield* sql`DELETE FROM auth.sessions WHERE id = ${claims["session_id"]}`
      const response = yield* getUserWith(url, session.access_token)
      expect(response.status).toBe(403)
      expect(response.json).toEqual(versionedError("session_not_found", "Session from session_id claim in JWT does not exist"))
    }))

  it.effect("a banned user: /user is 403 user_banned, the password grant 400 user_banned, refresh refused", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { email, session, userId } = yield* signedIn(url)
      yield* sql`UPDATE auth.users SET banned_until = now() + interval '1 hour' WHERE id = ${userId}`

      const user = yield* getUserWith(url, session.access_token)
      expect(user.status).toBe(403)
      expect(user.json).toEqual(versionedError("user_banned", "User is banned"))

      const signIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.error).toBeInstanceOf(AuthApiError)
      expect(signIn.error).toMatchObject({ status: 400, code: "user_banned", message: "User is banned" })
      const legacy = yield* raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })
      expect(legacy.json).toEqual(legacyError(400, "user_banned", "User is banned"))

      const refresh = yield* call(() => authClient(url).client.refreshSession({ refresh_token: session.refresh_token }))
      expect(refresh.error).toMatchObject({ status: 400, code: "user_banned" })

      // A ban that has run out is no ban.
      yield* sql`UPDATE auth.users SET banned_until = now() - interval '1 minute' WHERE id = ${userId}`
      expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
    }))
})

const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
const KID = "gatehouse-acceptance-es256"
const signingJwk = { ...privateKey.export({ format: "jwk" }), kid: KID, alg: "ES256", use: "sig", key_ops: ["sign"] }

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_JWT_KEYS: JSON.stringify([signingJwk]) })("ES256 tokens", (it) => {
  it.effect("/.well-known/jwks.json serves the public key only, ready for verification", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* raw(url, "/.well-known/jwks.json")
      expect(response.status).toBe(200)
      expect(response.headers.get("cache-control")).toBe("public, max-age=600")
      const { crv, kty, x, y } = publicKey.export({ format: "jwk" })
      expect(response.json).toEqual({ keys: [{ kty, crv, x, y, kid: KID, alg: "ES256", use: "sig", key_ops: ["verify"] }] })
      for (const secret of ["d", "p", "q", "dp", "dq", "qi", "k"]) expect(response.json.keys[0]).not.toHaveProperty(secret)
    }))

  it.effect("tokens are ES256 with the key's kid; getClaims verifies them with the JWKS, not with GET /user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, requests, email, session, claims, userId } = yield* signedIn(url)
      expect(decodeJwt(session.access_token).header).toEqual({ alg: "ES256", typ: "JWT", kid: KID })
      expectGoTrueClaims(claims, { email, userId, iss: "http://localhost:9999" })

      requests.length = 0
      const { data, error } = yield* call(() => client.getClaims())
      expect(error).toBeNull()
      expect(data!.claims).toEqual(claims)
      expect(data!.header).toEqual({ alg: "ES256", typ: "JWT", kid: KID })
      expect(requests).toEqual([{ method: "GET", path: "/.well-known/jwks.json" }])

      const refreshed = yield* call(() => client.refreshSession())
      expect(decodeJwt(refreshed.data.session!.access_token).header).toMatchObject({ alg: "ES256", kid: KID })
      expect((yield* call(() => client.getUser())).error).toBeNull()

      const tampered = withPayload(session.access_token, { ...claims, role: "service_role" })
      const forged = yield* call(() => client.getClaims(tampered))
      expect(forged.error).toBeInstanceOf(AuthInvalidJwtError)
      expect(forged.data).toBeNull()
    }))

  it.effect("algorithm confusion: an HS256 token keyed with the public key is a 403 bad_jwt", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { claims, session } = yield* signedIn(url)
      const publicJwk = publicKey.export({ format: "jwk" })
      const keys: Record<string, string | Buffer> = {
        "SPKI PEM": publicKey.export({ format: "pem", type: "spki" }),
        "SPKI DER": publicKey.export({ format: "der", type: "spki" }),
        "JWK JSON": JSON.stringify(publicJwk),
        "JWKS JSON": (yield* raw(url, "/.well-known/jwks.json")).text
      }
      for (const [name, key] of Object.entries(keys)) {
        for (const header of [{ alg: "HS256", typ: "JWT", kid: KID }, { alg: "HS256", typ: "JWT" }]) {
          const response = yield* getUserWith(url, signHs256(claims, key, header))
          expect(response.status, `${name} ${JSON.stringify(header)}`).toBe(403)
          expect(response.json.code, name).toBe("bad_jwt")
        }
      }
      const none = yield* getUserWith(url, unsigned(claims))
      expect(none.status).toBe(403)
      expect(none.json.code).toBe("bad_jwt")
      expect((yield* raw(url, "/user", { bearer: session.access_token })).status).toBe(200)
    }))
})
