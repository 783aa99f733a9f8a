import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { API_KEY_ROLES, apiKeyClaims, apiKeyIssuer } from "../../../src/auth/sessions/ApiKeys.js"

describe("apiKeyClaims", () => {
  it("names the role, the issuer and a lifetime of about ten years, and no user", () => {
    const claims = apiKeyClaims("anon", "http://localhost:8081", 1_700_000_000)
    expect(claims).toEqual({ iss: "http://localhost:8081", role: "anon", iat: 1_700_000_000, exp: claims.exp })
    const years = (claims.exp - claims.iat) / (365 * 24 * 3600)
    expect(years).toBeGreaterThanOrEqual(10)
    expect(years).toBeLessThan(10.1)
    expect(claims).not.toHaveProperty("sub")
    expect(claims).not.toHaveProperty("aud")
  })

  it("covers the anon and service_role keys, in that order", () => {
    expect(API_KEY_ROLES.map((role) => apiKeyClaims(role, "x", 0).role)).toEqual(["anon", "service_role"])
  })
})

describe("apiKeyIssuer", () => {
  it("is JWT_ISSUER when set", () => {
    expect(apiKeyIssuer(Option.some("https://issuer.example"), "https://auth.example")).toBe("https://issuer.example")
  })

  it("falls back to the external URL, then to gatehouse", () => {
    expect(apiKeyIssuer(Option.none(), "https://auth.example")).toBe("https://auth.example")
    expect(apiKeyIssuer(Option.none(), "")).toBe("gatehouse")
  })
})
