import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { parseScopes, scopesWith, withPassThrough } from "../../../src/auth/oauth/OAuthProvider.js"
import { githubEmails, githubEndpoints, githubProfile } from "../../../src/auth/oauth/providers/GitHub.js"
import { keycloakEndpoints, keycloakProfile } from "../../../src/auth/oauth/providers/Keycloak.js"

describe("keycloak", () => {
  it("endpoints are the realm's openid-connect routes, and the issuer the realm URL, whatever the trailing slash", () => {
    for (const realm of ["https://sso.example.com/realms/main", "https://sso.example.com/realms/main/"]) {
      expect(keycloakEndpoints(realm)).toEqual({
        authorization: "https://sso.example.com/realms/main/protocol/openid-connect/auth",
        token: "https://sso.example.com/realms/main/protocol/openid-connect/token",
        userinfo: "https://sso.example.com/realms/main/protocol/openid-connect/userinfo",
        jwks: "https://sso.example.com/realms/main/protocol/openid-connect/certs",
        issuer: "https://sso.example.com/realms/main"
      })
    }
  })

  it("userinfo maps to a profile; an unverified or absent email is not verified; no sub is no profile", () => {
    const realm = "https://sso.example.com/realms/main"
    const profile = Either.getOrThrow(keycloakProfile({ sub: "u1", email: "a@example.com", email_verified: true, name: "A", picture: "p" }, "u1", realm))
    expect(profile).toMatchObject({ providerId: "u1", email: "a@example.com", emailVerified: true, name: "A", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({ iss: realm, sub: "u1", full_name: "A", avatar_url: "p" })
    expect(Either.getOrThrow(keycloakProfile({ sub: "u1", email: "a@example.com" }, "u1", realm)).emailVerified).toBe(false)
    expect(Either.getOrThrow(keycloakProfile({ sub: "u1", email_verified: true }, "u1", realm))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.getOrThrow(keycloakProfile({ sub: "u1", email: "a@example.com", email_verified: "true" }, "u1", realm)).emailVerified).toBe(true)
    expect(Either.isLeft(keycloakProfile({ email: "a@example.com" }, "u1", realm))).toBe(true)
  })

  it.prop("userinfo is taken only for the subject of the verified ID token", {
    userinfoSub: FastCheck.string({ minLength: 1 }),
    idTokenSub: FastCheck.oneof(FastCheck.string(), FastCheck.constant(undefined), FastCheck.integer())
  }, ({ idTokenSub, userinfoSub }) => {
    const profile = keycloakProfile({ sub: userinfoSub, email: "a@example.com" }, idTokenSub, "https://sso.example.com/realms/main")
    expect(Either.isRight(profile)).toBe(userinfoSub === idTokenSub)
    expect(Either.isRight(keycloakProfile({ sub: userinfoSub }, userinfoSub, "https://sso.example.com/realms/main"))).toBe(true)
  })
})

describe("github", () => {
  it("github.com by default; a GitHub Enterprise Server's layout under EXTERNAL_GITHUB_URL", () => {
    expect(githubEndpoints(undefined)).toMatchObject({
      authorization: "https://github.com/login/oauth/authorize",
      token: "https://github.com/login/oauth/access_token",
      user: "https://api.github.com/user",
      emails: "https://api.github.com/user/emails"
    })
    expect(githubEndpoints("https://ghe.example.com/")).toMatchObject({
      authorization: "https://ghe.example.com/login/oauth/authorize",
      user: "https://ghe.example.com/api/v3/user"
    })
  })

  it("the primary address, verified only when GitHub says so; the numeric id is the subject", () => {
    const user = { id: 42, login: "octo", name: "Octo", avatar_url: "a" }
    const verified = githubEmails([
      { email: "other@example.com", primary: false, verified: true },
      { email: "main@example.com", primary: true, verified: true },
      { nonsense: true }
    ])
    expect(verified).toHaveLength(2)
    expect(Either.getOrThrow(githubProfile(user, verified, "https://api.github.com"))).toMatchObject({
      providerId: "42",
      email: "main@example.com",
      emailVerified: true,
      name: "Octo",
      avatarUrl: "a"
    })
    const unverified = githubEmails([{ email: "main@example.com", primary: true, verified: false }])
    expect(Either.getOrThrow(githubProfile(user, unverified, "i"))).toMatchObject({ email: "main@example.com", emailVerified: false })
    expect(Either.getOrThrow(githubProfile(user, githubEmails({ message: "Not Found" }), "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(githubProfile({ login: "octo" }, [], "i"))).toBe(true)
  })
})

describe("scopes", () => {
  it("extra scopes split on spaces and commas, after the provider's own, once each", () => {
    expect(scopesWith(["openid", "email"], parseScopes("repo, email  gist"))).toEqual(["openid", "email", "repo", "gist"])
    expect(parseScopes(undefined)).toEqual([])
  })
})

describe("pass-through parameters", () => {
  it("are added once, first value kept, and never replace the protocol's parameters", () => {
    const url = withPassThrough(new URL("https://idp.example.com/auth?client_id=c&state=s&scope=openid"), [
      ["prompt", "consent"],
      ["prompt", "login"],
      ["state", "forged"],
      ["redirect_uri", "https://evil.example.com"],
      ["kc_idp_hint", "google"]
    ])
    expect([...url.searchParams]).toEqual([["client_id", "c"], ["state", "s"], ["scope", "openid"], ["prompt", "consent"], ["kc_idp_hint", "google"]])
  })
})
