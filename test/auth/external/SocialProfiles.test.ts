/** The pure halves of discord, facebook, spotify, slack, linkedin and notion: endpoints and profile mappings. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { discordAvatarUrl, discordEndpoints, discordProfile } from "../../../src/auth/external/providers/Discord.js"

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
