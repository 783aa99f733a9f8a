/** The pure halves of google, azure, apple, gitlab and bitbucket: their endpoints and their profile mappings. */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Option } from "effect"
import { resolveIdTokenProvider } from "../../../src/auth/domain/IdToken.js"
import { ID_TOKEN_PROVIDERS } from "../../../src/auth/oauth/OAuthProviders.js"
import { appleEndpoints, applePostedName, appleProfile, withApplePostedUser } from "../../../src/auth/oauth/providers/Apple.js"
import { azureEndpoints, azureIssuerMatches, azureProfile } from "../../../src/auth/oauth/providers/Azure.js"
import { bitbucketEmails, bitbucketEndpoints, bitbucketProfile } from "../../../src/auth/oauth/providers/Bitbucket.js"
import { gitlabEndpoints, gitlabProfile } from "../../../src/auth/oauth/providers/GitLab.js"
import { googleEndpoints, googleProfile } from "../../../src/auth/oauth/providers/Google.js"

describe("google", () => {
  it("Google's four hosts by default; one host with Google's paths under EXTERNAL_GOOGLE_URL", () => {
    expect(googleEndpoints(undefined)).toEqual({
      authorization: "https://accounts.google.com/o/oauth2/v2/auth",
      token: "https://oauth2.googleapis.com/token",
      userinfo: "https://openidconnect.googleapis.com/v1/userinfo",
      jwks: "https://www.googleapis.com/oauth2/v3/certs"
    })
    expect(googleEndpoints("https://proxy.example.com/google/")).toEqual({
      authorization: "https://proxy.example.com/google/o/oauth2/v2/auth",
      token: "https://proxy.example.com/google/token",
      userinfo: "https://proxy.example.com/google/v1/userinfo",
      jwks: "https://proxy.example.com/google/oauth2/v3/certs"
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

describe("azure", () => {
  it("the common endpoint by default; a tenant URL's v2.0 routes under EXTERNAL_AZURE_URL", () => {
    expect(azureEndpoints(undefined)).toEqual({
      authorization: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
      token: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
      jwks: "https://login.microsoftonline.com/common/discovery/v2.0/keys",
      tenant: "common"
    })
    expect(azureEndpoints("https://login.microsoftonline.com/contoso.onmicrosoft.com/")).toMatchObject({
      authorization: "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize",
      tenant: "contoso.onmicrosoft.com"
    })
  })

  it("the ID-token grant reads the keys under the same tenant URL as the redirect flow", () => {
    const tenantUrl = "https://login.microsoftonline.com/contoso.onmicrosoft.com"
    const resolved = resolveIdTokenProvider(
      { provider: "azure", issuer: "", unverifiedIssuer: "https://login.microsoftonline.com/t-1/v2.0" },
      ID_TOKEN_PROVIDERS,
      () => ({ enabled: true, clientId: "az", url: Option.some(tenantUrl) })
    )
    expect(Either.getOrThrow(resolved).jwksUrl).toBe(azureEndpoints(tenantUrl).jwks)
  })

  it("the issuer is the token's own tenant's, and a tenant id in the URL pins it", () => {
    const tid = "9188040d-6c67-4c5b-b112-36a304b66dad"
    const claims = { iss: `https://login.microsoftonline.com/${tid}/v2.0`, tid }
    expect(azureIssuerMatches("common")(claims)).toBe(true)
    expect(azureIssuerMatches(tid.toUpperCase())(claims)).toBe(true)
    expect(azureIssuerMatches("72f988bf-86f1-41af-91ab-2d7cd011db47")(claims)).toBe(false)
    expect(azureIssuerMatches("common")({ ...claims, tid: "72f988bf-86f1-41af-91ab-2d7cd011db47" })).toBe(false)
    expect(azureIssuerMatches("common")({ iss: "https://evil.example.com/v2.0", tid })).toBe(false)
    expect(azureIssuerMatches("common")({ iss: claims.iss })).toBe(false)
  })

  it("the email counts as verified only with xms_edov (or email_verified); no sub is no profile", () => {
    const claims = { iss: "https://login.microsoftonline.com/t/v2.0", sub: "s1", tid: "t", name: "G", email: "g@example.com" }
    expect(Either.getOrThrow(azureProfile({ ...claims, xms_edov: true }))).toMatchObject({
      providerId: "s1",
      email: "g@example.com",
      emailVerified: true,
      name: "G",
      avatarUrl: null,
      claims: { custom_claims: { tid: "t" } }
    })
    expect(Either.getOrThrow(azureProfile(claims)).emailVerified).toBe(false)
    expect(Either.getOrThrow(azureProfile({ ...claims, xms_edov: false })).emailVerified).toBe(false)
    expect(Either.getOrThrow(azureProfile({ sub: "s1", xms_edov: true }))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(azureProfile({ email: "g@example.com", xms_edov: true }))).toBe(true)
  })
})

describe("apple", () => {
  it("appleid.apple.com by default; EXTERNAL_APPLE_URL moves the endpoints and keys, never the issuer", () => {
    expect(appleEndpoints(undefined)).toEqual({
      authorization: "https://appleid.apple.com/auth/authorize",
      token: "https://appleid.apple.com/auth/token",
      jwks: "https://appleid.apple.com/auth/keys",
      issuer: "https://appleid.apple.com"
    })
    expect(appleEndpoints("http://127.0.0.1:4000/apple/")).toEqual({
      authorization: "http://127.0.0.1:4000/apple/auth/authorize",
      token: "http://127.0.0.1:4000/apple/auth/token",
      jwks: "http://127.0.0.1:4000/apple/auth/keys",
      issuer: "https://appleid.apple.com"
    })
  })

  it("Apple's string booleans: email_verified \"true\" verifies, \"false\" does not; a relay address is marked", () => {
    const claims = { iss: "https://appleid.apple.com", sub: "001.abc.1", email: "x@privaterelay.appleid.com" }
    expect(Either.getOrThrow(appleProfile({ ...claims, email_verified: "true", is_private_email: "true" }))).toMatchObject({
      providerId: "001.abc.1",
      email: "x@privaterelay.appleid.com",
      emailVerified: true,
      name: null,
      claims: { iss: "https://appleid.apple.com", custom_claims: { is_private_email: true } }
    })
    expect(Either.getOrThrow(appleProfile({ ...claims, email_verified: true })).emailVerified).toBe(true)
    expect(Either.getOrThrow(appleProfile({ ...claims, email_verified: "false", is_private_email: "false" }))).toMatchObject({
      emailVerified: false,
      claims: { custom_claims: { is_private_email: false } }
    })
    expect(Either.getOrThrow(appleProfile({ ...claims })).emailVerified).toBe(false)
    expect(Either.getOrThrow(appleProfile({ sub: "001.abc.1", email_verified: "true" }))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(appleProfile({ email: "x@example.com", email_verified: "true" }))).toBe(true)
  })

  it("the first callback's posted user: the name joined first name first, as GoTrue joins it", () => {
    const posted = JSON.stringify({ name: { firstName: "Ada", lastName: "Lovelace" }, email: "ada@example.com" })
    expect(applePostedName(posted)).toEqual(Either.right(Option.some("Ada Lovelace")))
    expect(applePostedName(JSON.stringify({ name: { firstName: "Ada" } }))).toEqual(Either.right(Option.some("Ada")))
    expect(applePostedName(JSON.stringify({ name: { lastName: " Lovelace " } }))).toEqual(Either.right(Option.some("Lovelace")))
    expect(applePostedName(JSON.stringify({ email: "ada@example.com" }))).toEqual(Either.right(Option.none()))
    expect(applePostedName(JSON.stringify({ name: { firstName: 7, lastName: null } }))).toEqual(Either.right(Option.none()))
    for (const notApple of ["", "Ada Lovelace", "{", "[]", "null", "42", "\"Ada\""]) {
      expect(Either.isLeft(applePostedName(notApple)), notApple).toBe(true)
    }
  })

  it.prop("any first and last name come back trimmed and joined by one space, or none when both are blank", {
    first: FastCheck.string(),
    last: FastCheck.string()
  }, ({ first, last }) => {
    const joined = `${first} ${last}`.trim()
    expect(applePostedName(JSON.stringify({ name: { firstName: first, lastName: last } }))).toEqual(
      Either.right(joined === "" ? Option.none() : Option.some(joined))
    )
  })

  it("the posted name becomes the profile's name and its name and full_name claims; no name leaves the profile as it was", () => {
    const profile = Either.getOrThrow(appleProfile({ iss: "https://appleid.apple.com", sub: "001.abc.1", email: "x@example.com" }))
    const named = Either.getOrThrow(withApplePostedUser(profile, JSON.stringify({ name: { firstName: "Ada", lastName: "Lovelace" } })))
    expect(named).toMatchObject({ providerId: "001.abc.1", email: "x@example.com", name: "Ada Lovelace" })
    expect(named.claims).toMatchObject({ iss: "https://appleid.apple.com", name: "Ada Lovelace", full_name: "Ada Lovelace" })
    expect(withApplePostedUser(profile, JSON.stringify({ email: "x@example.com" }))).toEqual(Either.right(profile))
    expect(Either.isLeft(withApplePostedUser(profile, "not json"))).toBe(true)
  })
})

describe("gitlab", () => {
  it("gitlab.com by default; a self-managed instance's root and /api/v4 under EXTERNAL_GITLAB_URL", () => {
    expect(gitlabEndpoints(undefined)).toEqual({
      authorization: "https://gitlab.com/oauth/authorize",
      token: "https://gitlab.com/oauth/token",
      user: "https://gitlab.com/api/v4/user",
      issuer: "https://gitlab.com"
    })
    expect(gitlabEndpoints("https://git.example.com/")).toMatchObject({
      authorization: "https://git.example.com/oauth/authorize",
      user: "https://git.example.com/api/v4/user"
    })
  })

  it("the primary address, verified when confirmed_at is set; the numeric id is the subject", () => {
    const user = { id: 7, username: "lin", name: "Lin", avatar_url: "a", email: "lin@example.org", confirmed_at: "2017-11-03T09:13:20Z" }
    expect(Either.getOrThrow(gitlabProfile(user, "https://gitlab.com"))).toMatchObject({
      providerId: "7",
      email: "lin@example.org",
      emailVerified: true,
      name: "Lin",
      avatarUrl: "a",
      claims: { iss: "https://gitlab.com", user_name: "lin", preferred_username: "lin" }
    })
    expect(Either.getOrThrow(gitlabProfile({ ...user, confirmed_at: null }, "i")).emailVerified).toBe(false)
    expect(Either.getOrThrow(gitlabProfile({ ...user, email: undefined }, "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(gitlabProfile({ username: "lin", email: "lin@example.org" }, "i"))).toBe(true)
  })
})

describe("bitbucket", () => {
  it("bitbucket.org and api.bitbucket.org by default; one host under EXTERNAL_BITBUCKET_URL", () => {
    expect(bitbucketEndpoints(undefined)).toEqual({
      authorization: "https://bitbucket.org/site/oauth2/authorize",
      token: "https://bitbucket.org/site/oauth2/access_token",
      user: "https://api.bitbucket.org/2.0/user",
      emails: "https://api.bitbucket.org/2.0/user/emails",
      issuer: "https://api.bitbucket.org/2.0"
    })
    expect(bitbucketEndpoints("http://127.0.0.1:4000/bb/")).toMatchObject({
      authorization: "http://127.0.0.1:4000/bb/site/oauth2/authorize",
      user: "http://127.0.0.1:4000/bb/2.0/user"
    })
  })

  it("the primary address, verified only when confirmed; the uuid is the subject", () => {
    const user = { uuid: "{u-1}", display_name: "Tim", nickname: "tim", links: { avatar: { href: "a" } } }
    const emails = bitbucketEmails({
      values: [
        { email: "old@example.net", is_primary: false, is_confirmed: true },
        { email: "tim@example.net", is_primary: true, is_confirmed: true },
        { email: 1 }
      ]
    })
    expect(emails).toHaveLength(2)
    expect(Either.getOrThrow(bitbucketProfile(user, emails, "i"))).toMatchObject({
      providerId: "{u-1}",
      email: "tim@example.net",
      emailVerified: true,
      name: "Tim",
      avatarUrl: "a",
      claims: { user_name: "tim" }
    })
    const unconfirmed = bitbucketEmails({ values: [{ email: "tim@example.net", is_primary: true, is_confirmed: false }] })
    expect(Either.getOrThrow(bitbucketProfile(user, unconfirmed, "i"))).toMatchObject({ email: "tim@example.net", emailVerified: false })
    expect(Either.getOrThrow(bitbucketProfile(user, bitbucketEmails({ type: "error" }), "i"))).toMatchObject({ email: null, emailVerified: false })
    expect(Either.isLeft(bitbucketProfile({ display_name: "Tim" }, emails, "i"))).toBe(true)
  })
})
