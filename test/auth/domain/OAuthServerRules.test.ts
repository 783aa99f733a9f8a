import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  clientAuthProblem,
  clientSecretMatches,
  hashClientSecret,
  parseBasicCredentials
} from "../../../src/auth/domain/ClientCredentials.js"
import { idTokenClaims, isIdTokenClaims, userInfoClaims } from "../../../src/auth/domain/OAuthClaims.js"
import {
  decideRegistration,
  readRegisterBody,
  readUpdateBody,
  registerProblem,
  updateProblem
} from "../../../src/auth/domain/OAuthClientRules.js"
import { errorRedirect, goQueryEscape, goQueryUnescape, successRedirect } from "../../../src/auth/domain/OAuthRedirect.js"
import { fitsAuthorizationColumns } from "../../../src/auth/domain/OAuthAuthorizationRequest.js"
import { goUrlParse, isGoRequestUri, redirectUriProblem, resourceProblem } from "../../../src/auth/domain/OAuthRedirectUri.js"
import { coversScopes, parseScopes, scopeProblem } from "../../../src/auth/domain/OAuthScopes.js"
import { challengeOf, oauthPkceProblem, verifierMatches } from "../../../src/auth/domain/Pkce.js"
import type { UserRow } from "../../../src/auth/domain/UserRow.js"

describe("redirect URIs (GoTrue's validateRedirectURI cases)", () => {
  it("accepts https, loopback http and custom schemes", () => {
    for (const uri of ["https://example.com/callback", "http://localhost:3000/cb", "http://127.0.0.1/cb", "http://[::1]:8080/cb",
      "com.example.app://oauth/callback", "myapp://localhost:8080/callback", "https://example.com/cb?x=1"]) {
      expect(redirectUriProblem(uri), uri).toBeUndefined()
    }
  })

  it("refuses with GoTrue's reasons", () => {
    const cases: Array<[string, string]> = [
      ["", "redirect URI cannot be empty"],
      ["http://example.com/callback", "HTTP scheme only allowed for localhost"],
      ["http://192.168.1.1/callback", "HTTP scheme only allowed for localhost"],
      ["https://example.com/callback#fragment", "fragment not allowed in redirect URI"],
      ["myapp://callback#fragment", "fragment not allowed in redirect URI"],
      ["example.com/callback", "must have scheme and host"],
      ["https:///callback", "must have scheme and host"],
      ["not-a-uri", "must have scheme and host"],
      ["https:example.com", "must have scheme and host"],
      ["javascript://example.com/alert(1)", "scheme 'javascript' is not allowed for security reasons"],
      ["data://text/html,<script>alert(1)</script>", "scheme 'data' is not allowed for security reasons"],
      ["file://localhost/etc/passwd", "scheme 'file' is not allowed for security reasons"],
      ["vbscript://example.com/malicious", "scheme 'vbscript' is not allowed for security reasons"],
      ["about://blank", "scheme 'about' is not allowed for security reasons"],
      ["blob://example.com/something", "scheme 'blob' is not allowed for security reasons"],
      ["JAVASCRIPT://example.com/alert(1)", "scheme 'javascript' is not allowed for security reasons"],
      ["https://exa mple.com/", "invalid URL format"],
      ["https://example.com/%zz", "invalid URL format"],
      ["https://example.com:port/", "invalid URL format"],
      [":no-scheme", "invalid URL format"],
      ["https://example.com/a,b", "a comma is not allowed in a redirect URI"]
    ]
    for (const [uri, why] of cases) expect(redirectUriProblem(uri), uri).toBe(why)
  })

  it("an empty fragment is no fragment, as in Go", () => {
    expect(redirectUriProblem("https://example.com/cb#")).toBeUndefined()
    expect(goUrlParse("https://u:p@example.com:8443/p?q=1#f")).toEqual({
      scheme: "https", opaque: "", host: "example.com:8443", path: "/p", rawQuery: "q=1", fragment: "f"
    })
  })

  it("client and logo URIs as Go's ParseRequestURI reads them", () => {
    expect(isGoRequestUri("https://example.com/logo.png")).toBe(true)
    expect(isGoRequestUri("/relative/path")).toBe(true)
    expect(isGoRequestUri("https:example.com")).toBe(true)
    expect(isGoRequestUri("relative")).toBe(false)
    expect(isGoRequestUri("")).toBe(false)
  })

  it("resource (RFC 8707)", () => {
    expect(resourceProblem("")).toBeUndefined()
    expect(resourceProblem("https://api.example.com")).toBeUndefined()
    expect(resourceProblem("api")).toBe("resource must be an absolute URI")
    expect(resourceProblem("https://api.example.com#x")).toBe("resource must not include a fragment component")
    expect(resourceProblem("https://api.example.com?x=1")).toBe("resource must not include a query component")
    expect(resourceProblem("https://api.example.com/%")).toBe("resource must be a valid URI")
  })
})

describe("Go's query encoding", () => {
  it("escapes as url.QueryEscape does", () => {
    expect(goQueryEscape("a b~*!'()")).toBe("a+b~%2A%21%27%28%29")
    expect(goQueryEscape("é/?&=")).toBe("%C3%A9%2F%3F%26%3D")
  })

  it.prop("round-trips through form decoding", [FastCheck.string()], ([s]) => {
    expect(goQueryUnescape(goQueryEscape(s))).toBe(s)
  })

  it("redirects re-encode the URI's query with keys sorted and set values replaced", () => {
    expect(successRedirect("https://c.example.com/cb?z=1&a=x%20y&code=old", "C", "s t")).toBe("https://c.example.com/cb?a=x+y&code=C&state=s+t&z=1")
    expect(successRedirect("myapp://cb", "C", null)).toBe("myapp://cb?code=C")
    expect(errorRedirect("https://c.example.com/cb", "access_denied", "User denied the request", ""))
      .toBe("https://c.example.com/cb?error=access_denied&error_description=User+denied+the+request")
  })
})

describe("scopes and PKCE", () => {
  it("scopes are split on spaces and checked against GoTrue's list", () => {
    expect(parseScopes(" openid  email ")).toEqual(["openid", "email"])
    expect(scopeProblem("   ")).toBe("scope parameter cannot be empty")
    expect(scopeProblem("openid admin")).toBe("unsupported scope: admin")
    expect(scopeProblem("openid profile email phone offline_access")).toBeUndefined()
    expect(coversScopes("email profile", "profile")).toBe(true)
    expect(coversScopes("email", "email phone")).toBe(false)
  })

  it("PKCE is required, S256 or plain in any case, 43 to 128 characters", () => {
    const c = "a".repeat(43)
    expect(oauthPkceProblem("", "S256")).toBe("PKCE flow requires both code_challenge and code_challenge_method")
    expect(oauthPkceProblem(c, "")).toBe("PKCE flow requires both code_challenge and code_challenge_method")
    expect(oauthPkceProblem(c, "S512")).toBe("code_challenge_method must be 'S256' or 'plain'")
    expect(oauthPkceProblem("a".repeat(42), "plain")).toBe("code_challenge must be between 43 and 128 characters")
    expect(oauthPkceProblem("a".repeat(129), "PLAIN")).toBe("code_challenge must be between 43 and 128 characters")
    expect(oauthPkceProblem(c, "s256")).toBeUndefined()
  })

  it("an authorization request fits GoTrue's columns, counted in characters, with no NUL", () => {
    const fits = { redirect_uri: "https://a.example.com/cb", scope: "email", state: "s", resource: "", nonce: "n" }
    expect(fitsAuthorizationColumns(fits)).toBe(true)
    expect(fitsAuthorizationColumns({ ...fits, nonce: "é".repeat(255) })).toBe(true)
    expect(fitsAuthorizationColumns({ ...fits, nonce: "n".repeat(256) })).toBe(false)
    expect(fitsAuthorizationColumns({ ...fits, state: "s".repeat(4097) })).toBe(false)
    expect(fitsAuthorizationColumns({ ...fits, resource: "r".repeat(2049) })).toBe(false)
    for (const field of ["redirect_uri", "scope", "state", "resource", "nonce"]) {
      expect(fitsAuthorizationColumns({ ...fits, [field]: "a\u0000b" }), field).toBe(false)
    }
  })

  it.prop("S256 and plain verifiers match only their challenge", [FastCheck.string({ minLength: 43, maxLength: 128 })], ([verifier]) => {
    const s256 = createHash("sha256").update(verifier).digest("base64url")
    expect(challengeOf(verifier, "s256")).toBe(s256)
    expect(verifierMatches(verifier, { challenge: s256, method: "s256" })).toBe(true)
    expect(verifierMatches(verifier, { challenge: verifier, method: "plain" })).toBe(true)
    expect(verifierMatches(`${verifier}x`, { challenge: s256, method: "s256" })).toBe(false)
  })
})

describe("client credentials", () => {
  const id = "3f2a1b4c-0d9e-4f8a-b7c6-5d4e3f2a1b0c"
  const encode = (s: string) => Buffer.from(s).toString("base64")

  it("Basic credentials are decoded as RFC 6749 §2.3.1 says (GoTrue reads them raw)", () => {
    // What oauth4webapi sends: - and _ escaped.
    const secret = "a-b_c"
    const rfc = `${encodeURIComponent(id).replace(/-/g, "%2D")}:${"a%2Db%5Fc"}`
    expect(parseBasicCredentials(`Basic ${encode(rfc)}`)).toEqual({ id, secret })
    expect(parseBasicCredentials(`Basic ${encode(`${id}:${secret}`)}`)).toEqual({ id, secret })
    expect(parseBasicCredentials(`Basic ${encode(`${id}:a:b+c`)}`)).toEqual({ id, secret: "a:b c" })
  })

  it("refuses what GoTrue refuses, and a malformed escape", () => {
    expect(parseBasicCredentials("Basic %%%")).toEqual({ problem: "invalid basic auth encoding" })
    expect(parseBasicCredentials("Basic YWJj")).toEqual({ problem: "invalid basic auth format" })
    expect(parseBasicCredentials(`Basic ${encode(`${id}:%zz`)}`)).toEqual({ problem: "invalid basic auth encoding" })
  })

  it.prop("any id and secret survive form-url-encoding in Basic", [FastCheck.string(), FastCheck.string()], ([i, s]) => {
    const header = `Basic ${encode(`${goQueryEscape(i)}:${goQueryEscape(s)}`)}`
    expect(parseBasicCredentials(header)).toEqual({ id: i, secret: s })
  })

  it("secrets are kept as GoTrue's SHA-256 and compared whole", () => {
    const hash = hashClientSecret("s3cret")
    expect(hash).toBe(createHash("sha256").update("s3cret").digest("base64url"))
    expect(clientSecretMatches("s3cret", hash)).toBe(true)
    expect(clientSecretMatches("s3cre", hash)).toBe(false)
    expect(clientSecretMatches("s3cret", null)).toBe(false)
  })

  it("the method used must be the one registered; public clients send no secret", () => {
    const confidential = { client_type: "confidential", token_endpoint_auth_method: "client_secret_basic", client_secret_hash: hashClientSecret("s") }
    expect(clientAuthProblem(confidential, { clientId: id, clientSecret: "s", method: "client_secret_post" }))
      .toBe("invalid authentication method: client is registered for 'client_secret_basic' but 'client_secret_post' was used")
    expect(clientAuthProblem(confidential, { clientId: id, clientSecret: "", method: "client_secret_basic" })).toBe("confidential clients must provide client_secret")
    expect(clientAuthProblem(confidential, { clientId: id, clientSecret: "x", method: "client_secret_basic" })).toBe("invalid client credentials")
    expect(clientAuthProblem(confidential, { clientId: id, clientSecret: "s", method: "client_secret_basic" })).toBeUndefined()
    const publicClient = { client_type: "public", token_endpoint_auth_method: "none", client_secret_hash: null }
    expect(clientAuthProblem(publicClient, { clientId: id, clientSecret: "", method: "none" })).toBeUndefined()
  })
})

describe("client registration rules", () => {
  const body = (fields: Record<string, unknown>) => readRegisterBody({ redirect_uris: ["https://a.example.com/cb"], ...fields })!

  it("reads the body as Go's decoder does: wrong types are no body", () => {
    expect(readRegisterBody(null)).toBeUndefined()
    expect(readRegisterBody([])).toBeUndefined()
    expect(readRegisterBody({ redirect_uris: "https://a" })).toBeUndefined()
    expect(readRegisterBody({ client_name: 1 })).toBeUndefined()
    expect(readRegisterBody({ client_name: null, unknown: 1 })).toMatchObject({ clientName: "", redirectUris: [] })
    expect(readUpdateBody({ client_name: "" })).toEqual({ clientName: "" })
    expect(readUpdateBody({ grant_types: [1] })).toBeUndefined()
  })

  it("validates in GoTrue's order with its words", () => {
    expect(registerProblem(readRegisterBody({})!)).toBe("redirect_uris is required")
    expect(registerProblem(body({ redirect_uris: Array.from({ length: 11 }, (_, i) => `https://a.example.com/${i}`) }))).toBe("redirect_uris cannot exceed 10 items")
    expect(registerProblem(body({ grant_types: ["implicit"] }))).toBe("grant_types must only contain 'authorization_code' and/or 'refresh_token'")
    expect(registerProblem(body({ client_name: "x".repeat(1025) }))).toBe("client_name cannot exceed 1024 characters")
    expect(registerProblem(body({ logo_uri: "logo" }))).toBe("logo_uri must be a valid URL")
    expect(registerProblem(body({ client_type: "secret" }))).toBe("client_type must be 'public' or 'confidential'")
    expect(registerProblem(body({ token_endpoint_auth_method: "private_key_jwt" })))
      .toBe("token_endpoint_auth_method must be one of: [none client_secret_basic client_secret_post]")
    expect(registerProblem(body({ client_type: "public", token_endpoint_auth_method: "client_secret_post" })))
      .toBe("client_type 'public' is inconsistent with token_endpoint_auth_method 'client_secret_post' (expected client_type 'confidential')")
  })

  it("a client's home page and logo are https, or http on a loopback host (stricter than GoTrue)", () => {
    for (const uri of ["https://acme.example.com", "https://acme.example.com/logo.png?v=1", "http://localhost:3000/logo.png", "http://127.0.0.1/x",
      "http://[::1]:8080/x", "HTTPS://acme.example.com"]) {
      expect(registerProblem(body({ client_uri: uri, logo_uri: uri })), uri).toBeUndefined()
    }
    for (const uri of ["javascript:alert(1)", "javascript://acme.example.com/%0Aalert(1)", "data:image/svg+xml;base64,PHN2Zz4=",
      "http://acme.example.com/logo.png", "ftp://acme.example.com/logo.png", "/logo.png", "vbscript:msgbox"]) {
      expect(registerProblem(body({ logo_uri: uri })), uri).toBe("logo_uri must be an https URL (http only on localhost)")
      expect(registerProblem(body({ client_uri: uri })), uri).toBe("client_uri must be an https URL (http only on localhost)")
      expect(updateProblem({ logoUri: uri }, "public"), uri).toBe("logo_uri must be an https URL (http only on localhost)")
    }
    expect(updateProblem({ clientUri: "" }, "public")).toBeUndefined()
  })

  it("infers the type from the method, and the method from the type", () => {
    expect(decideRegistration(body({}))).toEqual({ clientType: "confidential", method: "client_secret_basic", grantTypes: ["authorization_code", "refresh_token"] })
    expect(decideRegistration(body({ token_endpoint_auth_method: "none" }))).toMatchObject({ clientType: "public", method: "none" })
    expect(decideRegistration(body({ client_type: "public" }))).toMatchObject({ clientType: "public", method: "none" })
    expect(decideRegistration(body({ token_endpoint_auth_method: "client_secret_post", grant_types: ["authorization_code"] })))
      .toEqual({ clientType: "confidential", method: "client_secret_post", grantTypes: ["authorization_code"] })
  })

  it("updates: something to change, and a method that fits the client's type", () => {
    expect(updateProblem({}, "public")).toBe("No fields provided for update")
    expect(updateProblem({ redirectUris: [] }, "public")).toBe("redirect_uris cannot be empty")
    expect(updateProblem({ grantTypes: [] }, "public")).toBe("grant_types cannot be empty")
    expect(updateProblem({ tokenEndpointAuthMethod: "x" }, "public")).toBe("invalid token_endpoint_auth_method: must be one of [none client_secret_basic client_secret_post]")
    expect(updateProblem({ tokenEndpointAuthMethod: "none" }, "confidential"))
      .toBe("token_endpoint_auth_method 'none' is not valid for client_type 'confidential'; valid methods: [client_secret_basic client_secret_post]")
    expect(updateProblem({ clientName: "" }, "public")).toBeUndefined()
  })
})

describe("claims", () => {
  const user = {
    id: "u-1",
    email: "ada@example.com",
    email_confirmed_at: new Date(0),
    phone: "15550001",
    phone_confirmed_at: null,
    raw_user_meta_data: { avatar_url: "https://img.example.com/a.png", username: "ada" },
    updated_at: new Date(1_700_000_000_000)
  } as unknown as UserRow

  it("userinfo gives sub alone to a session without scopes, and each scope's claims", () => {
    expect(userInfoClaims(user, null)).toEqual({ sub: "u-1" })
    expect(userInfoClaims(user, "openid email profile phone")).toEqual({
      sub: "u-1",
      email: "ada@example.com",
      email_verified: true,
      name: "ada@example.com",
      picture: "https://img.example.com/a.png",
      preferred_username: "ada",
      updated_at: 1_700_000_000,
      user_metadata: { avatar_url: "https://img.example.com/a.png", username: "ada" },
      phone: "15550001"
    })
  })

  it("an ID token always says whether email and phone are verified", () => {
    expect(idTokenClaims({ user, issuer: "https://auth.example.com", clientId: "c-1", scopes: "openid", nonce: null, authTime: 5, iat: 10 })).toEqual({
      iss: "https://auth.example.com", sub: "u-1", aud: "c-1", exp: 3610, iat: 10, auth_time: 5,
      email_verified: false, phone_number_verified: false, client_id: "c-1"
    })
    expect(idTokenClaims({ user, issuer: "i", clientId: "c", scopes: "openid email phone", nonce: "n", authTime: 5, iat: 10 }))
      .toMatchObject({ nonce: "n", email: "ada@example.com", email_verified: true, phone_number: "15550001", phone_number_verified: false })
  })

  it("an ID token is told from every access token: it names a client and no session", () => {
    expect(isIdTokenClaims(idTokenClaims({ user, issuer: "i", clientId: "c", scopes: "openid", nonce: null, authTime: 5, iat: 10 }))).toBe(true)
    expect(isIdTokenClaims({ sub: "u-1", client_id: "c", session_id: "00000000-0000-0000-0000-000000000000" })).toBe(true)
    expect(isIdTokenClaims({ sub: "u-1", client_id: "c", session_id: "4d6f7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", role: "authenticated" })).toBe(false)
    expect(isIdTokenClaims({ sub: "u-1", session_id: "4d6f7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", role: "authenticated" })).toBe(false)
    expect(isIdTokenClaims({ role: "service_role" })).toBe(false)
    expect(isIdTokenClaims({ role: "anon" })).toBe(false)
    expect(isIdTokenClaims({ sub: "u-1", role: "authenticated" })).toBe(false)
  })
})
