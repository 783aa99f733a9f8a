import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { twitchEndpoints, twitchProfile } from "../../../src/auth/oauth/providers/Twitch.js"
import { workosEndpoints, workosPassThrough, workosProfile } from "../../../src/auth/oauth/providers/WorkOS.js"
import { zoomEndpoints, zoomProfile } from "../../../src/auth/oauth/providers/Zoom.js"

describe("twitch", () => {
  it("id.twitch.tv and api.twitch.tv by default; one host under EXTERNAL_TWITCH_URL", () => {
    expect(twitchEndpoints(undefined)).toMatchObject({
      authorization: "https://id.twitch.tv/oauth2/authorize",
      token: "https://id.twitch.tv/oauth2/token",
      users: "https://api.twitch.tv/helix/users"
    })
    expect(twitchEndpoints("http://127.0.0.1:1234/")).toMatchObject({
      authorization: "http://127.0.0.1:1234/oauth2/authorize",
      users: "http://127.0.0.1:1234/helix/users"
    })
  })

  it("the first Helix user; an address Twitch hands out is verified; no user is no profile", () => {
    const user = { id: "1", login: "dev", display_name: "Dev", profile_image_url: "p", email: "dev@example.com" }
    const profile = Either.getOrThrow(twitchProfile({ data: [user] }, "https://api.twitch.tv/helix"))
    expect(profile).toMatchObject({ providerId: "1", email: "dev@example.com", emailVerified: true, name: "Dev", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({ sub: "1", preferred_username: "dev", full_name: "Dev", avatar_url: "p" })
    expect(Either.getOrThrow(twitchProfile({ data: [{ id: "1", login: "dev" }] }, "i"))).toMatchObject({
      email: null,
      emailVerified: false,
      name: "dev"
    })
    expect(Either.isLeft(twitchProfile({ data: [] }, "i"))).toBe(true)
    expect(Either.isLeft(twitchProfile({}, "i"))).toBe(true)
  })
})

describe("zoom", () => {
  it("zoom.us and api.zoom.us/v2 by default; one host under EXTERNAL_ZOOM_URL", () => {
    expect(zoomEndpoints(undefined)).toMatchObject({
      authorization: "https://zoom.us/oauth/authorize",
      token: "https://zoom.us/oauth/token",
      me: "https://api.zoom.us/v2/users/me"
    })
    expect(zoomEndpoints("http://127.0.0.1:1234")).toMatchObject({ token: "http://127.0.0.1:1234/oauth/token", me: "http://127.0.0.1:1234/v2/users/me" })
  })

  it("verified only when `verified` is 1; the name from display_name or first and last", () => {
    const user = { id: "z1", email: "z@example.com", verified: 1, first_name: "Jill", last_name: "Chill", pic_url: "p" }
    expect(Either.getOrThrow(zoomProfile(user, "i"))).toMatchObject({ providerId: "z1", emailVerified: true, name: "Jill Chill", avatarUrl: "p" })
    expect(Either.getOrThrow(zoomProfile({ ...user, display_name: "JC" }, "i")).name).toBe("JC")
    expect(Either.getOrThrow(zoomProfile({ ...user, verified: 0 }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(zoomProfile({ ...user, verified: "1" }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(zoomProfile({ id: "z1", verified: 1 }, "i"))).toMatchObject({ email: null, emailVerified: false, name: null })
    expect(Either.isLeft(zoomProfile({ email: "z@example.com" }, "i"))).toBe(true)
  })
})

describe("workos", () => {
  it("api.workos.com by default, or EXTERNAL_WORKOS_URL", () => {
    expect(workosEndpoints(undefined)).toMatchObject({
      authorization: "https://api.workos.com/sso/authorize",
      token: "https://api.workos.com/sso/token"
    })
    expect(workosEndpoints("http://127.0.0.1:1234/").token).toBe("http://127.0.0.1:1234/sso/token")
  })

  it("the token answer's profile, never verified, with the connection it came through", () => {
    const profile = Either.getOrThrow(workosProfile({
      id: "prof_1",
      email: "t@example.com",
      first_name: "Todd",
      last_name: "Rundgren",
      connection_id: "conn_1",
      connection_type: "OktaSAML",
      organization_id: "org_1",
      raw_attributes: { a: 1 }
    }, "https://api.workos.com"))
    expect(profile).toMatchObject({ providerId: "prof_1", email: "t@example.com", emailVerified: false, name: "Todd Rundgren", avatarUrl: null })
    expect(profile.claims).toMatchObject({ connection_id: "conn_1", organization_id: "org_1", email_verified: false, raw_attributes: { a: 1 } })
    expect(Either.isLeft(workosProfile({ email: "t@example.com" }, "i"))).toBe(true)
  })

  it("workos_provider goes to WorkOS as provider; connection and organization as they are", () => {
    expect(workosPassThrough([["connection", "conn_1"], ["workos_provider", "GoogleOAuth"], ["organization", "org_1"]])).toEqual([
      ["connection", "conn_1"],
      ["provider", "GoogleOAuth"],
      ["organization", "org_1"]
    ])
  })
})
