/**
 * Native sign-in with an ID token: auth-js signInWithIdToken against POST /token?grant_type=id_token, with the
 * providers' key sets served by a local HTTP server (EXTERNAL_<P>_URL points the server at it) and ID tokens signed
 * here with its RS256 key. GoTrue's refusals are OAuth-style `{error, error_description}` bodies, never a 500.
 */
import { createHash, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import { listenScoped } from "../../platform/LocalServers.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptanceServer, authClient, call, codeIn, decodeJwt, mailTo, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"

const KID = "test-key-1"
const GOOGLE_ISSUER = "https://accounts.google.com"
const APPLE_ISSUER = "https://appleid.apple.com"
const AZURE_ISSUER = "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"

/** The stand-in identity provider: its base URL, and ID tokens signed with its key (or, for the forgery test, another). */
class Idp extends Context.Tag("test/Idp")<Idp, {
  readonly baseUrl: string
  readonly sign: (claims: JWTPayload, options?: { readonly forged?: boolean; readonly expiresIn?: number }) => Promise<string>
  readonly keyRequests: () => ReadonlyArray<string>
}>() {}

const KEY_PATHS = ["/oauth2/v3/certs", "/auth/keys", "/common/discovery/v2.0/keys", "/realms/test/protocol/openid-connect/certs"]

const startIdp = Effect.gen(function*() {
  const { privateKey, publicKey } = yield* Effect.promise(() => generateKeyPair("RS256"))
  const forger = yield* Effect.promise(() => generateKeyPair("RS256"))
  const jwk = { ...(yield* Effect.promise(() => exportJWK(publicKey))), kid: KID, alg: "RS256", use: "sig" }
  const requests: Array<string> = []
  const server = createServer((req, res) => {
    requests.push(req.url ?? "")
    if (req.method === "GET" && KEY_PATHS.includes(req.url ?? "")) {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ keys: [jwk] }))
    } else {
      res.writeHead(404)
      res.end()
    }
  })
  const port = yield* listenScoped(server)
  const sign = (claims: JWTPayload, options: { readonly forged?: boolean; readonly expiresIn?: number } = {}) => {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ iat: now, exp: now + (options.expiresIn ?? 600), ...claims })
      .setProtectedHeader({ alg: "RS256", kid: KID, typ: "JWT" })
      .sign(options.forged === true ? forger.privateKey : privateKey)
  }
  return { baseUrl: `http://127.0.0.1:${port}`, sign, keyRequests: () => [...requests] }
})

const provider = (name: string, url: string, clientId: string) => {
  const key = `AUTH_EXTERNAL_${name.toUpperCase()}`
  return {
    [`${key}_ENABLED`]: "true",
    [`${key}_CLIENT_ID`]: clientId,
    [`${key}_SECRET`]: "secret",
    [`${key}_REDIRECT_URI`]: "http://localhost:9999/callback",
    [`${key}_URL`]: url
  }
}

const IdpServer = (enabled: boolean) =>
  Layer.unwrapScoped(Effect.map(startIdp, (idp) =>
    Layer.merge(
      acceptanceServer(enabled
        ? {
          ...provider("google", idp.baseUrl, "google-web, google-ios"),
          ...provider("apple", idp.baseUrl, "com.example.app"),
          // The tenant URL, as EXTERNAL_AZURE_URL is written: its keys are under it.
          ...provider("azure", `${idp.baseUrl}/common`, "azure-client"),
          ...provider("keycloak", `${idp.baseUrl}/realms/test`, "kc-client")
        }
        : {}),
      Layer.succeed(Idp, idp)
    )))

const sha256Hex = (value: string) => createHash("sha256").update(value).digest("hex")

const googleClaims = (fields: JWTPayload = {}): JWTPayload => ({
  iss: GOOGLE_ISSUER,
  aud: "google-ios",
  sub: `g-${randomUUID()}`,
  email: uniqueEmail("google"),
  email_verified: true,
  name: "Grace Hopper",
  picture: "https://img.example/grace.png",
  ...fields
})

/** The token endpoint's answer to a hand-sent id_token grant, as auth-js would send it. */
const grant = (url: string, body: Record<string, unknown>) =>
  raw(url, "/token?grant_type=id_token", { body, apiVersion: true })

const oauthError = (error: string, description: string) => ({ error, error_description: description })

layer(IdpServer(true), { timeout: 120_000, excludeTestServices: true })("id_token grant with the providers on", (it) => {
  it.effect("google: the first sign-in makes a confirmed user with the identity; the second is the same user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const idp = yield* Idp
      const claims = googleClaims()
      const nonce = randomUUID()
      const token = yield* call(() => idp.sign({ ...claims, nonce: sha256Hex(nonce) }))
      const { client } = authClient(url)
      const first = yield* call(() => client.signInWithIdToken({ provider: "google", token, nonce }))
      expect(first.error).toBeNull()
      const user = first.data.user!
      expect(user.email).toBe(claims.email)
      expect(user.email_confirmed_at).toBeDefined()
      expect(user.app_metadata).toEqual({ provider: "google", providers: ["google"] })
      expect(user.user_metadata).toMatchObject({
        iss: GOOGLE_ISSUER, sub: claims.sub, provider_id: claims.sub, email: claims.email, email_verified: true,
        phone_verified: false, name: "Grace Hopper", full_name: "Grace Hopper", picture: "https://img.example/grace.png",
        avatar_url: "https://img.example/grace.png"
      })
      const amr = decodeJwt(first.data.session!.access_token).payload["amr"]
      expect(amr.map((a: { method: string }) => a.method)).toEqual(["oauth"])

      const { data: { user: fetched } } = yield* call(() => client.getUser())
      expect(fetched!.identities!.map((i) => [i.provider, i.id, i.identity_data?.["email"]])).toEqual([["google", claims.sub, claims.email]])

      const again = yield* call(() => authClient(url).client.signInWithIdToken({ provider: "google", token: token, nonce }))
      expect(again.error).toBeNull()
      expect(again.data.user!.id).toBe(user.id)
      expect(again.data.user!.identities).toHaveLength(1)
      expect(idp.keyRequests()).toContain("/oauth2/v3/certs")
    }))

  it.effect("apple, azure (any tenant) and keycloak sign in against their own issuers and key paths", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const idp = yield* Idp
      const apple = yield* call(() =>
        idp.sign({ iss: APPLE_ISSUER, aud: "com.example.app", sub: "apple-1", email: uniqueEmail("apple"), email_verified: "true", is_private_email: "true" }))
      const azure = yield* call(() =>
        idp.sign({ iss: AZURE_ISSUER, aud: "azure-client", sub: "azure-1", email: uniqueEmail("azure"), xms_edov: true, tid: "9188040d", name: "Az" }))
      const keycloak = yield* call(() =>
        idp.sign({ iss: `${idp.baseUrl}/realms/test`, aud: ["kc-client", "account"], sub: "kc-1", email: uniqueEmail("kc"), email_verified: true, given_name: "K" }))
      for (const [name, token] of [["apple", apple], ["azure", azure], ["keycloak", keycloak]] as const) {
        const result = yield* call(() => authClient(url).client.signInWithIdToken({ provider: name, token }))
        expect(result.error).toBeNull()
        expect(result.data.user!.identities!.map((i) => i.provider)).toEqual([name])
        expect(result.data.user!.email_confirmed_at).toBeDefined()
      }
      // Without `provider`, the issuer and a client id name it, as GoTrue allows.
      const byIssuer = yield* grant(url, { id_token: apple, issuer: APPLE_ISSUER, client_id: "com.example.app" })
      expect(byIssuer.status).toBe(200)
      expect(idp.keyRequests()).toEqual(expect.arrayContaining(KEY_PATHS.slice(1)))
    }))

  it.effect("refusals: GoTrue's OAuth-style errors for a bad token, audience, issuer, expiry, signature or nonce", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const idp = yield* Idp
      const refused = (token: string, extra: Record<string, unknown> = {}) =>
        Effect.map(grant(url, { provider: "google", id_token: token, ...extra }), (r) => [r.status, r.json])
      const badToken = [400, oauthError("invalid request", "Bad ID token")]

      expect(yield* refused("")).toEqual([400, oauthError("invalid request", "id_token required")])
      expect(yield* Effect.map(grant(url, { id_token: "x" }), (r) => [r.status, r.json]))
        .toEqual([400, oauthError("invalid request", "provider or client_id and issuer required")])
      expect(yield* refused("not-a-jwt")).toEqual(badToken)
      expect(yield* refused(yield* call(() => idp.sign(googleClaims({ aud: "someone-else" })))))
        .toEqual([400, oauthError("invalid request", "Unacceptable audience in id_token: [someone-else]")])
      expect(yield* refused(yield* call(() => idp.sign(googleClaims({ iss: "https://evil.example" }))))).toEqual(badToken)
      expect(yield* refused(yield* call(() => idp.sign(googleClaims(), { expiresIn: -60 })))).toEqual(badToken)
      expect(yield* refused(yield* call(() => idp.sign(googleClaims(), { forged: true })))).toEqual(badToken)

      const withNonce = yield* call(() => idp.sign(googleClaims({ nonce: sha256Hex("n-1") })))
      const bothOrNeither = [400, oauthError("invalid request", "Passed nonce and nonce in id_token should either both exist or not.")]
      expect(yield* refused(withNonce)).toEqual(bothOrNeither)
      expect(yield* refused(yield* call(() => idp.sign(googleClaims())), { nonce: "n-1" })).toEqual(bothOrNeither)
      expect(yield* refused(withNonce, { nonce: "n-2" })).toEqual([400, oauthError("invalid nonce", "Nonces mismatch")])
      // The plain nonce is not the token's nonce: only its hash is.
      const plain = yield* call(() => idp.sign(googleClaims({ nonce: "n-1" })))
      expect(yield* refused(plain, { nonce: "n-1" })).toEqual([400, oauthError("invalid nonce", "Nonces mismatch")])

      // Another provider's token sent as google's: wrong issuer.
      const apple = yield* call(() => idp.sign({ iss: APPLE_ISSUER, aud: "com.example.app", sub: "a", email: "a@example.com" }))
      expect(yield* refused(apple)).toEqual(badToken)

      // auth-js shows the description as the message.
      const viaClient = yield* call(() =>
        authClient(url).client.signInWithIdToken({ provider: "google", token: withNonce, nonce: "wrong" }))
      expect([viaClient.error?.status, viaClient.error?.message]).toEqual([400, "Nonces mismatch"])
    }))

  it.effect("an unverified email is not linked to a password user; a verified one is, and the password still works", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const idp = yield* Idp
      const email = uniqueEmail("owner")
      const { client: owner } = authClient(url)
      expect((yield* call(() => owner.signUp({ email, password: PASSWORD }))).error).toBeNull()
      const [mail] = yield* mailTo(email)
      const confirmed = yield* call(() => owner.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))
      expect(confirmed.error).toBeNull()
      const ownerId = confirmed.data.user!.id

      const unverified = yield* grant(url, {
        provider: "google",
        id_token: yield* call(() => idp.sign(googleClaims({ email, email_verified: false })))
      })
      expect([unverified.status, unverified.json]).toEqual([422, {
        code: "provider_email_needs_verification",
        message: "Unverified email with google. Verify the email with google in order to sign in"
      }])
      const untouched = yield* call(() => owner.getUser())
      expect(untouched.data.user!.identities!.map((i) => i.provider)).toEqual(["email"])

      const token = yield* call(() => idp.sign(googleClaims({ email: email.toUpperCase(), email_verified: true })))
      const linked = yield* call(() => authClient(url).client.signInWithIdToken({ provider: "google", token }))
      expect(linked.error).toBeNull()
      expect(linked.data.user!.id).toBe(ownerId)
      expect(linked.data.user!.identities!.map((i) => i.provider)).toEqual(["email", "google"])
      expect(linked.data.user!.app_metadata).toEqual({ provider: "email", providers: ["email", "google"] })
      const withPassword = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(withPassword.data.user?.id).toBe(ownerId)
    }))
})

layer(IdpServer(false), { timeout: 120_000, excludeTestServices: true })("id_token grant with the providers off", (it) => {
  it.effect("a disabled provider is provider_disabled; an unknown one is GoTrue's validation_failed", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const idp = yield* Idp
      const token = yield* call(() => idp.sign(googleClaims()))
      const disabled = yield* grant(url, { provider: "google", id_token: token })
      expect([disabled.status, disabled.json]).toEqual([400, { code: "provider_disabled", message: `Provider (issuer "${GOOGLE_ISSUER}") is not enabled` }])
      const unknown = yield* grant(url, { provider: "github", id_token: token })
      expect([unknown.status, unknown.json]).toEqual([400, { code: "validation_failed", message: 'Custom OIDC provider "" not allowed' }])
      const keycloak = yield* grant(url, { provider: "keycloak", id_token: token })
      expect([keycloak.status, keycloak.json?.code]).toEqual([400, "provider_disabled"])
    }))
})
