import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Option } from "effect"
import {
  checkAccessTokenHash,
  checkAudience,
  checkNonce,
  clientIdsOf,
  type IdTokenProviderSettings,
  type IdTokenRequestTarget,
  resolveIdTokenProvider as resolveAmong,
  sha256Hex
} from "../../../src/auth/domain/IdToken.js"
import { ID_TOKEN_PROVIDERS } from "../../../src/auth/oauth/OAuthProviders.js"

const on = (clientId: string, url?: string): IdTokenProviderSettings => ({ enabled: true, clientId, url: Option.fromNullable(url) })
const off: IdTokenProviderSettings = { enabled: false, clientId: "", url: Option.none() }

type IdTokenProviderName = "apple" | "google" | "azure" | "keycloak"

const settings = (overrides: Partial<Record<IdTokenProviderName, IdTokenProviderSettings>>) => (name: string) =>
  overrides[name as IdTokenProviderName] ?? off

/** The rule over the providers the registry gives it (their descriptors' issuers and key URLs), the profile left out. */
const resolveIdTokenProvider = (target: IdTokenRequestTarget, providerSettings: (name: string) => IdTokenProviderSettings) =>
  Either.map(resolveAmong(target, ID_TOKEN_PROVIDERS, providerSettings), ({ profile: _, ...resolved }) => resolved)

/** A verified token's profile, by the rules of the named provider's descriptor. */
const profileFromIdToken = (name: IdTokenProviderName, payload: Readonly<Record<string, unknown>>) =>
  ID_TOKEN_PROVIDERS.find(([provider]) => provider === name)![1].profile(payload)

const codeOf = <A>(result: Either.Either<A, { code: string; message: string }>) =>
  Either.isLeft(result) ? [result.left.code, result.left.message] : "ok"

const target = (provider: string, issuer = "", unverifiedIssuer?: string) => ({ provider, issuer, unverifiedIssuer })

describe("resolveIdTokenProvider", () => {
  it("each provider's issuer and key URL, the URL setting moving only the keys (keycloak's is its issuer)", () => {
    const all = settings({
      apple: on("com.example.app"),
      google: on("web, ios", "http://127.0.0.1:1/"),
      azure: on("az"),
      keycloak: on("kc", "https://sso.example/realms/main/")
    })
    expect(resolveIdTokenProvider(target("apple"), all)).toEqual(Either.right({
      name: "apple", issuer: "https://appleid.apple.com", jwksUrl: "https://appleid.apple.com/auth/keys", clientIds: ["com.example.app"]
    }))
    expect(resolveIdTokenProvider(target("google"), all)).toEqual(Either.right({
      name: "google", issuer: "https://accounts.google.com", jwksUrl: "http://127.0.0.1:1/oauth2/v3/certs", clientIds: ["web", "ios"]
    }))
    const tenant = "https://login.microsoftonline.com/tenant-1/v2.0"
    expect(resolveIdTokenProvider(target("azure", "", tenant), all)).toEqual(Either.right({
      name: "azure", issuer: tenant, jwksUrl: "https://login.microsoftonline.com/common/discovery/v2.0/keys", clientIds: ["az"]
    }))
    expect(resolveIdTokenProvider(target("", "https://sso.example/realms/main"), all)).toEqual(Either.right({
      name: "keycloak",
      issuer: "https://sso.example/realms/main",
      jwksUrl: "https://sso.example/realms/main/protocol/openid-connect/certs",
      clientIds: ["kc"]
    }))
    // By issuer alone, as {client_id, issuer} requests name them.
    expect(Either.map(resolveIdTokenProvider(target("", "https://accounts.google.com"), all), (p) => p.name)).toEqual(Either.right("google"))
    expect(Either.map(resolveIdTokenProvider(target("", tenant), all), (p) => p.issuer)).toEqual(Either.right(tenant))
  })

  it("GoTrue's refusals: unknown provider, disabled provider, an Azure token without an Azure issuer", () => {
    const none = settings({})
    expect(codeOf(resolveIdTokenProvider(target("github"), none))).toEqual(["validation_failed", 'Custom OIDC provider "" not allowed'])
    expect(codeOf(resolveIdTokenProvider(target("", "https://evil.example"), none)))
      .toEqual(["validation_failed", 'Custom OIDC provider "https://evil.example" not allowed'])
    expect(codeOf(resolveIdTokenProvider(target("google"), none)))
      .toEqual(["provider_disabled", 'Provider (issuer "https://accounts.google.com") is not enabled'])
    expect(codeOf(resolveIdTokenProvider(target("keycloak"), none))[0]).toBe("provider_disabled")
    expect(codeOf(resolveIdTokenProvider(target("azure", "", "https://evil.example/v2.0"), settings({ azure: on("az") }))))
      .toEqual(["validation_failed", "Unable to detect issuer in ID token for Azure provider"])
  })

  it("tries the registry's providers in GoTrue's order: naming one provider and another's issuer means the earlier", () => {
    expect([...ID_TOKEN_PROVIDERS].sort(([, a], [, b]) => a.order - b.order).map(([name]) => name))
      .toEqual(["apple", "google", "azure", "keycloak"])
    const all = settings({ apple: on("a"), google: on("g") })
    expect(Either.map(resolveIdTokenProvider(target("google", "https://appleid.apple.com"), all), (p) => p.name)).toEqual(Either.right("apple"))
    expect(Either.map(resolveIdTokenProvider(target("azure", "https://accounts.google.com"), all), (p) => p.name)).toEqual(Either.right("google"))
  })

  it("a disabled keycloak is not chosen by its issuer", () => {
    const kc = settings({ keycloak: { ...on("kc", "https://sso.example/realms/main"), enabled: false } })
    expect(codeOf(resolveIdTokenProvider(target("", "https://sso.example/realms/main"), kc))[0]).toBe("validation_failed")
  })

  it("client ids are a comma-separated list", () => {
    expect(clientIdsOf(" a, b ,,c ")).toEqual(["a", "b", "c"])
    expect(clientIdsOf("")).toEqual([])
  })
})

describe("checkNonce", () => {
  it.prop("the token's nonce is the SHA-256 hex of the request's: only that passes", [FastCheck.string({ minLength: 1 }), FastCheck.string({ minLength: 1 })], ([nonce, other]) => {
    expect(checkNonce(sha256Hex(nonce), nonce)).toEqual(Either.void)
    if (other !== nonce) expect(codeOf(checkNonce(sha256Hex(nonce), other))).toEqual(["invalid nonce", "Nonces mismatch"])
    // The plain value itself is refused: whoever saw the token could replay it.
    expect(Either.isLeft(checkNonce(nonce, nonce))).toBe(true)
  })

  it.prop("one nonce without the other is refused", [FastCheck.string({ minLength: 1 })], ([nonce]) => {
    const both = ["invalid request", "Passed nonce and nonce in id_token should either both exist or not."]
    expect(codeOf(checkNonce(sha256Hex(nonce), ""))).toEqual(both)
    expect(codeOf(checkNonce(undefined, nonce))).toEqual(both)
    expect(checkNonce(undefined, "")).toEqual(Either.void)
  })
})

describe("checkAudience", () => {
  it("any one of the token's audiences must be a client id", () => {
    expect(checkAudience("b", ["a", "b"])).toEqual(Either.void)
    expect(checkAudience(["x", "a"], ["a"])).toEqual(Either.void)
    expect(codeOf(checkAudience(["x", "y"], ["a"]))).toEqual(["invalid request", "Unacceptable audience in id_token: [x y]"])
    expect(Either.isLeft(checkAudience(undefined, ["a"]))).toBe(true)
    expect(Either.isLeft(checkAudience("a", []))).toBe(true)
  })
})

describe("checkAccessTokenHash", () => {
  const atHash = (token: string) => createHash("sha256").update(token).digest().subarray(0, 16).toString("base64url")
  it("ties the access token to the ID token when both are there", () => {
    expect(checkAccessTokenHash("RS256", atHash("tok"), "tok")).toEqual(Either.void)
    expect(codeOf(checkAccessTokenHash("RS256", atHash("tok"), "other"))).toEqual(["invalid request", "Bad ID token"])
    expect(checkAccessTokenHash("RS256", undefined, "tok")).toEqual(Either.void)
    expect(checkAccessTokenHash("RS256", atHash("tok"), "")).toEqual(Either.void)
  })
})

describe("profileFromIdToken", () => {
  it("google: name and picture; apple: string booleans; azure: xms_edov and tid; keycloak: needs an email", () => {
    expect(profileFromIdToken("google", {
      iss: "https://accounts.google.com", sub: "g", email: "a@example.com", email_verified: true, name: "N", picture: "p", hd: "example.com"
    })).toEqual(Either.right({
      providerId: "g", email: "a@example.com", emailVerified: true, name: "N", avatarUrl: "p",
      claims: { iss: "https://accounts.google.com", custom_claims: { hd: "example.com" } }
    }))
    expect(profileFromIdToken("apple", { sub: "a", email: "x@privaterelay.appleid.com", email_verified: "true", is_private_email: "true" }))
      .toEqual(Either.right({ providerId: "a", email: "x@privaterelay.appleid.com", emailVerified: true, claims: { custom_claims: { is_private_email: true } } }))
    expect(Either.map(profileFromIdToken("azure", { sub: "z", email: "z@example.com", xms_edov: true, tid: "t" }), (p) => [p.emailVerified, p.claims]))
      .toEqual(Either.right([true, { custom_claims: { tid: "t" } }]))
    expect(codeOf(profileFromIdToken("keycloak", { sub: "k" }))).toEqual(["invalid request", "Bad ID token"])
    expect(codeOf(profileFromIdToken("google", { email: "a@example.com" }))).toEqual(["invalid request", "Missing sub claim in id_token"])
  })
})
