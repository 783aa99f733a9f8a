import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { twitterEndpoints, twitterProfile } from "../../../src/auth/oauth/providers/Twitter.js"

describe("twitter", () => {
  it("api.twitter.com by default, or EXTERNAL_TWITTER_URL", () => {
    expect(twitterEndpoints(undefined)).toEqual({
      requestToken: "https://api.twitter.com/oauth/request_token",
      authenticate: "https://api.twitter.com/oauth/authenticate",
      accessToken: "https://api.twitter.com/oauth/access_token",
      verifyCredentials: "https://api.twitter.com/1.1/account/verify_credentials.json?include_email=true",
      issuer: "https://api.twitter.com/1.1"
    })
    expect(twitterEndpoints("http://127.0.0.1:1234/").accessToken).toBe("http://127.0.0.1:1234/oauth/access_token")
  })

  it("id_str is the subject; an address Twitter hands out is verified; no id_str is no profile", () => {
    const user = { id: 2244994945, id_str: "2244994945", name: "Twitter Dev", screen_name: "TwitterDev", profile_image_url_https: "p", email: "d@example.com" }
    const profile = Either.getOrThrow(twitterProfile(user, "https://api.twitter.com/1.1"))
    expect(profile).toMatchObject({ providerId: "2244994945", email: "d@example.com", emailVerified: true, name: "Twitter Dev", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({ user_name: "TwitterDev", preferred_username: "TwitterDev", avatar_url: "p", full_name: "Twitter Dev" })
    expect(Either.getOrThrow(twitterProfile({ ...user, email: null }, "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(twitterProfile({ id: 1, screen_name: "x" }, "i"))).toBe(true)
  })
})
