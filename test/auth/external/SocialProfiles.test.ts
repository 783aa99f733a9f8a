/** The pure halves of discord, facebook, spotify, slack, linkedin and notion: endpoints and profile mappings. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { appSecretProof, facebookEndpoints, facebookProfile } from "../../../src/auth/oauth/providers/Facebook.js"
import { linkedinEndpoints, linkedinProfile } from "../../../src/auth/oauth/providers/LinkedIn.js"
import { notionEndpoints, notionProfile } from "../../../src/auth/oauth/providers/Notion.js"
import { slackEndpoints, slackProfile } from "../../../src/auth/oauth/providers/Slack.js"
import { spotifyEndpoints, spotifyProfile } from "../../../src/auth/oauth/providers/Spotify.js"
import { discordAvatarUrl, discordEndpoints, discordProfile } from "../../../src/auth/oauth/providers/Discord.js"

describe("discord", () => {
  it("discord.com by default; EXTERNAL_DISCORD_URL replaces the origin", () => {
    expect(discordEndpoints(undefined)).toEqual({
      authorization: "https://discord.com/api/oauth2/authorize",
      token: "https://discord.com/api/oauth2/token",
      user: "https://discord.com/api/users/@me",
      issuer: "https://discord.com/api"
    })
    expect(discordEndpoints("http://127.0.0.1:9/discord/").token).toBe("http://127.0.0.1:9/discord/api/oauth2/token")
  })

  it("avatars: by hash on the CDN (animated as GIF), else Discord's default by id or legacy discriminator", () => {
    expect(discordAvatarUrl("80351110224678912", "8342729096ea3675442027381ff50dfe", "0"))
      .toBe("https://cdn.discordapp.com/avatars/80351110224678912/8342729096ea3675442027381ff50dfe.png")
    expect(discordAvatarUrl("1", "a_1269e74af4df7417b13759eae50c83dc", "0")).toBe("https://cdn.discordapp.com/avatars/1/a_1269e74af4df7417b13759eae50c83dc.gif")
    expect(discordAvatarUrl("80351110224678912", null, "1337")).toBe("https://cdn.discordapp.com/embed/avatars/2.png")
    expect(discordAvatarUrl("80351110224678912", null, "0")).toBe(`https://cdn.discordapp.com/embed/avatars/${Number((80351110224678912n >> 22n) % 6n)}.png`)
  })

  it("verified only by Discord's flag; the display name before the username; no id is no profile", () => {
    const user = { id: "80351110224678912", username: "nelly", global_name: "Nelly", discriminator: "0", avatar: "abc", email: "nelly@example.com", verified: true }
    const profile = Either.getOrThrow(discordProfile(user, "https://discord.com/api"))
    expect(profile).toMatchObject({
      providerId: "80351110224678912",
      email: "nelly@example.com",
      emailVerified: true,
      name: "Nelly",
      avatarUrl: "https://cdn.discordapp.com/avatars/80351110224678912/abc.png"
    })
    expect(profile.claims).toMatchObject({ sub: "80351110224678912", full_name: "Nelly", user_name: "nelly", custom_claims: { global_name: "Nelly" } })
    expect(Either.getOrThrow(discordProfile({ ...user, verified: false }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(discordProfile({ ...user, global_name: null }, "i")).name).toBe("nelly")
    expect(Either.getOrThrow(discordProfile({ id: "1", verified: true }, "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(discordProfile({ username: "nelly" }, "i"))).toBe(true)
  })
})

describe("facebook", () => {
  it("the dialog on www.facebook.com, the rest on graph.facebook.com, version-pinned; EXTERNAL_FACEBOOK_URL replaces both", () => {
    expect(facebookEndpoints(undefined)).toEqual({
      authorization: "https://www.facebook.com/v22.0/dialog/oauth",
      token: "https://graph.facebook.com/v22.0/oauth/access_token",
      me: "https://graph.facebook.com/v22.0/me",
      issuer: "https://graph.facebook.com"
    })
    expect(facebookEndpoints("http://127.0.0.1:9/fb/").authorization).toBe("http://127.0.0.1:9/fb/v22.0/dialog/oauth")
  })

  it("appsecret_proof is the token's HMAC-SHA256 under the app secret, in hex", () => {
    // Computed independently: printf %s token | openssl dgst -sha256 -hmac secret
    expect(appSecretProof("token", "secret")).toBe("e941110e3d2bfe82621f0e3e1434730d7305d106c5f68c87165d0b27a4611a4a")
  })

  it("an address Facebook returns is confirmed; none is none; the picture comes from picture.data.url", () => {
    const me = { id: "101", name: "Mark Example", first_name: "Mark", last_name: "Example", email: "m@example.com", picture: { data: { url: "p" } } }
    const profile = Either.getOrThrow(facebookProfile(me, "https://graph.facebook.com"))
    expect(profile).toMatchObject({ providerId: "101", email: "m@example.com", emailVerified: true, name: "Mark Example", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({ given_name: "Mark", family_name: "Example", full_name: "Mark Example", avatar_url: "p" })
    expect(Either.getOrThrow(facebookProfile({ id: "101", first_name: "Mark", last_name: "Example" }, "i")))
      .toMatchObject({ email: null, emailVerified: false, name: "Mark Example", avatarUrl: null })
    expect(Either.isLeft(facebookProfile({ name: "Mark" }, "i"))).toBe(true)
  })
})

describe("spotify", () => {
  it("accounts.spotify.com and api.spotify.com/v1; EXTERNAL_SPOTIFY_URL replaces both", () => {
    expect(spotifyEndpoints(undefined)).toEqual({
      authorization: "https://accounts.spotify.com/authorize",
      token: "https://accounts.spotify.com/api/token",
      me: "https://api.spotify.com/v1/me",
      issuer: "https://api.spotify.com/v1"
    })
    expect(spotifyEndpoints("http://127.0.0.1:9/s").me).toBe("http://127.0.0.1:9/s/v1/me")
  })

  it("the address is never verified; the largest image is the avatar; no id is no profile", () => {
    const me = {
      id: "smedjan",
      display_name: "Sam",
      email: "s@example.com",
      images: [{ url: "big", width: 300, height: 300 }, { url: "small", width: 64, height: 64 }, { height: 1 }]
    }
    const profile = Either.getOrThrow(spotifyProfile(me, "https://api.spotify.com/v1"))
    expect(profile).toMatchObject({ providerId: "smedjan", email: "s@example.com", emailVerified: false, name: "Sam", avatarUrl: "big" })
    expect(profile.claims).toMatchObject({ email_verified: false, full_name: "Sam", avatar_url: "big" })
    expect(Either.getOrThrow(spotifyProfile({ id: "x", images: [] }, "i"))).toMatchObject({ email: null, name: null, avatarUrl: null })
    expect(Either.isLeft(spotifyProfile({ display_name: "Sam" }, "i"))).toBe(true)
  })
})

describe("slack", () => {
  it("slack.com's OpenID Connect routes; EXTERNAL_SLACK_URL replaces the origin", () => {
    expect(slackEndpoints(undefined)).toEqual({
      authorization: "https://slack.com/openid/connect/authorize",
      token: "https://slack.com/api/openid.connect.token",
      userinfo: "https://slack.com/api/openid.connect.userInfo",
      issuer: "https://slack.com"
    })
    expect(slackEndpoints("http://127.0.0.1:9/slack/").userinfo).toBe("http://127.0.0.1:9/slack/api/openid.connect.userInfo")
  })

  it("email_verified decides; the workspace is a custom claim; ok: false is a failure, not a user", () => {
    const userinfo = { ok: true, sub: "U1", "https://slack.com/team_id": "T1", email: "k@example.com", email_verified: true, name: "k", picture: "p" }
    const profile = Either.getOrThrow(slackProfile(userinfo, "https://slack.com"))
    expect(profile).toMatchObject({ providerId: "U1", email: "k@example.com", emailVerified: true, name: "k", avatarUrl: "p" })
    expect(profile.claims).toMatchObject({ custom_claims: { "https://slack.com/team_id": "T1" } })
    expect(Either.getOrThrow(slackProfile({ ...userinfo, email_verified: false }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(slackProfile({ sub: "U1", email_verified: true }, "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(slackProfile({ ok: false, error: "invalid_auth" }, "i")).toEqual(Either.left("userInfo answered invalid_auth"))
    expect(Either.isLeft(slackProfile({ ok: true }, "i"))).toBe(true)
  })
})

describe("linkedin", () => {
  it("www.linkedin.com for OAuth, api.linkedin.com for userinfo; EXTERNAL_LINKEDIN_URL replaces both", () => {
    expect(linkedinEndpoints(undefined)).toEqual({
      authorization: "https://www.linkedin.com/oauth/v2/authorization",
      token: "https://www.linkedin.com/oauth/v2/accessToken",
      userinfo: "https://api.linkedin.com/v2/userinfo",
      issuer: "https://www.linkedin.com/oauth"
    })
    expect(linkedinEndpoints("http://127.0.0.1:9/li").userinfo).toBe("http://127.0.0.1:9/li/v2/userinfo")
  })

  it("email_verified decides; the name falls back to given and family names; no sub is no profile", () => {
    const userinfo = { sub: "782bbtaQ", email: "j@example.com", email_verified: true, name: "John Doe", given_name: "John", family_name: "Doe", picture: "p" }
    expect(Either.getOrThrow(linkedinProfile(userinfo, "https://www.linkedin.com/oauth"))).toMatchObject({
      providerId: "782bbtaQ",
      email: "j@example.com",
      emailVerified: true,
      name: "John Doe",
      avatarUrl: "p"
    })
    expect(Either.getOrThrow(linkedinProfile({ ...userinfo, email_verified: false }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(linkedinProfile({ sub: "x", given_name: "John", family_name: "Doe" }, "i"))).toMatchObject({
      name: "John Doe",
      email: null,
      emailVerified: false
    })
    expect(Either.isLeft(linkedinProfile({ email: "j@example.com" }, "i"))).toBe(true)
  })
})

describe("notion", () => {
  it("api.notion.com/v1's OAuth routes; EXTERNAL_NOTION_URL replaces the origin", () => {
    expect(notionEndpoints(undefined)).toEqual({
      authorization: "https://api.notion.com/v1/oauth/authorize",
      token: "https://api.notion.com/v1/oauth/token",
      issuer: "https://api.notion.com/v1"
    })
    expect(notionEndpoints("http://127.0.0.1:9/n/").token).toBe("http://127.0.0.1:9/n/v1/oauth/token")
  })

  it("the token answer's owner.user is the profile, its address never verified; a workspace owner is no user", () => {
    const token = {
      access_token: "ntn_x",
      workspace_id: "w1",
      owner: { type: "user", user: { object: "user", id: "u1", name: "Ada", avatar_url: "a", type: "person", person: { email: "ada@example.com" } } }
    }
    const profile = Either.getOrThrow(notionProfile(token, "https://api.notion.com/v1"))
    expect(profile).toMatchObject({ providerId: "u1", email: "ada@example.com", emailVerified: false, name: "Ada", avatarUrl: "a" })
    expect(profile.claims).toMatchObject({ email_verified: false, custom_claims: { workspace_id: "w1" } })
    expect(Either.isLeft(notionProfile({ access_token: "x", owner: { type: "workspace", workspace: true } }, "i"))).toBe(true)
    expect(Either.isLeft(notionProfile({ owner: { type: "user", user: { object: "user" } } }, "i"))).toBe(true)
    expect(Either.isLeft(notionProfile({}, "i"))).toBe(true)
  })
})
