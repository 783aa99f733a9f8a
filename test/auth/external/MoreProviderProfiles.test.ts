/** The pure halves of google, azure, apple, gitlab and bitbucket: their endpoints and their profile mappings. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { googleEndpoints, googleProfile } from "../../../src/auth/external/providers/Google.js"

describe("google", () => {
  it("Google's three hosts by default; one host with Google's paths under EXTERNAL_GOOGLE_URL", () => {
    expect(googleEndpoints(undefined)).toEqual({
      authorization: "https://accounts.google.com/o/oauth2/v2/auth",
      token: "https://oauth2.googleapis.com/token",
      userinfo: "https://openidconnect.googleapis.com/v1/userinfo"
    })
    expect(googleEndpoints("https://proxy.example.com/google/")).toEqual({
      authorization: "https://proxy.example.com/google/o/oauth2/v2/auth",
      token: "https://proxy.example.com/google/token",
      userinfo: "https://proxy.example.com/google/v1/userinfo"
    })
  })

  it("userinfo maps to a profile; verified only when Google says so; hd kept; no sub is no profile", () => {
    const profile = Either.getOrThrow(googleProfile({
      sub: "1101",
      email: "a@example.com",
      email_verified: true,
      name: "A",
      picture: "p",
      hd: "example.com"
    }))
    expect(profile).toMatchObject({ providerId: "1101", email: "a@example.com", emailVerified: true, name: "A", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({
      iss: "https://accounts.google.com",
      sub: "1101",
      full_name: "A",
      avatar_url: "p",
      custom_claims: { hd: "example.com" }
    })
    expect(Either.getOrThrow(googleProfile({ sub: "1101", email: "a@example.com", email_verified: false })).emailVerified).toBe(false)
    expect(Either.getOrThrow(googleProfile({ sub: "1101", email: "a@example.com" })).emailVerified).toBe(false)
    expect(Either.getOrThrow(googleProfile({ sub: "1101", email_verified: true }))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(googleProfile({ email: "a@example.com", email_verified: true }))).toBe(true)
  })
})
