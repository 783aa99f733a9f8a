/**
 * Manual identity linking through auth-js, against support/GitHubFake: a signed-in user links github
 * (linkIdentity → GET /user/identities/authorize → GitHub → /callback), sees it in getUserIdentities, signs in with
 * it, and unlinks it (unlinkIdentity → DELETE /user/identities/{identity_id}). With
 * SECURITY_MANUAL_LINKING_ENABLED off, both routes answer 404 manual_linking_disabled.
 */
import { randomInt, randomUUID } from "node:crypto"
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, decodeJwt, PASSWORD, raw, uniqueEmail } from "../acceptance/AcceptanceKit.js"
import { browser } from "../support/Browser.js"
import { GITHUB_CODE, GITHUB_REDIRECT_URI, githubEnv, octocat, startGitHubFake } from "../support/GitHubFake.js"

const SITE_URL = "http://localhost:3000"

type Client = ReturnType<typeof authClient>["client"]

const github = await startGitHubFake()
afterAll(() => github.close())

/** A GitHub account of its own for each case, so no case trips over another's identity. */
const githubAccount = (email: string, verified = true) => {
  const id = randomInt(1_000_000, 2_000_000_000)
  github.user = { ...octocat, id, login: `octo-${id}`, name: `Octo ${id}` }
  github.emails = [{ email, primary: true, verified, visibility: "public" }]
  return String(id)
}

/** A password user, signed in on its own auth-js client (autoconfirm is on). */
const passwordUser = (url: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const email = uniqueEmail("linker")
    const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD }))
    expect(error).toBeNull()
    expect(data.session).not.toBeNull()
    return { client, email, id: data.user!.id }
  })

// The test servers' API_EXTERNAL_URL, where GitHub sends the browser back.
const API_EXTERNAL_URL = new URL(GITHUB_REDIRECT_URI).origin

/**
 * The users' browser (one for all, as the flows run one after another), reaching the server under API_EXTERNAL_URL as
 * an app's users do: the host the provider sends them back to, so the OAuth browser-binding cookie rides along.
 */
const browsers = new Map<string, ReturnType<typeof browser>>()
const browserAt = (url: string) => {
  if (!browsers.has(url)) browsers.set(url, browser({ [API_EXTERNAL_URL]: url }))
  return browsers.get(url)!
}
const viaPublicUrl = (url: string): string => {
  const parsed = new URL(url)
  return `${API_EXTERNAL_URL}${parsed.pathname}${parsed.search}`
}

/** What the browser does with a provider URL: GitHub consents at once and sends it to /callback with the state. */
const consentAndCallBack = (url: string, providerUrl: string) =>
  Effect.gen(function*() {
    const state = new URL(providerUrl).searchParams.get("state")!
    const response = yield* call(() => browserAt(url).request(`${GITHUB_REDIRECT_URI}?${new URLSearchParams({ code: GITHUB_CODE, state })}`))
    expect(response.status).toBe(302)
    const location = new URL(response.headers.get("location")!)
    return { location, fragment: new URLSearchParams(location.hash.slice(1)) }
  })

const linkGitHub = (url: string, client: Client) =>
  Effect.gen(function*() {
    const { data, error } = yield* call(() => client.linkIdentity({ provider: "github", options: { redirectTo: `${SITE_URL}/linked` } }))
    expect(error).toBeNull()
    // The browser opens the URL linkIdentity hands out (auth-js assigns it to window.location): it binds the flow to
    // this browser and leads on to GitHub.
    const toGitHub = (yield* call(() => browserAt(url).request(data.url!))).headers.get("location")!
    expect(new URL(toGitHub).pathname).toBe("/login/oauth/authorize")
    return yield* consentAndCallBack(url, toGitHub)
  })

const identitiesOf = (client: Client) =>
  Effect.map(call(() => client.getUserIdentities()), ({ data, error }) => {
    expect(error).toBeNull()
    return data!.identities
  })

const ENABLED = { ...githubEnv(github), AUTH_MAILER_AUTOCONFIRM: "true", AUTH_SECURITY_MANUAL_LINKING_ENABLED: "true" }

acceptance(ENABLED)("manual linking", (it) => {
  it.effect("a password user links github, signs in with it as the same user, and unlinks it; the last identity stays", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, email, id } = yield* passwordUser(url)
      const githubId = githubAccount(uniqueEmail("octo"))

      const { location, fragment } = yield* linkGitHub(url, client)
      expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/linked`)
      expect(fragment.get("error")).toBeNull()
      expect(fragment.get("provider")).toBe("github")
      expect(decodeJwt(fragment.get("access_token")!).payload["sub"]).toBe(id)

      const identities = yield* identitiesOf(client)
      expect(identities.map((identity) => identity.provider)).toEqual(["email", "github"])
      const linked = identities.find((identity) => identity.provider === "github")!
      expect(linked).toMatchObject({ id: githubId, user_id: id })
      const { data: afterLink } = yield* call(() => client.getUser())
      // Linking never takes over the user's own address.
      expect(afterLink.user).toMatchObject({ id, email, app_metadata: { provider: "email", providers: ["email", "github"] } })

      // Signing in with github now reaches the same user.
      const { client: other } = authClient(url)
      const started = yield* call(() => other.signInWithOAuth({ provider: "github", options: { skipBrowserRedirect: true } }))
      const toGitHub = yield* call(() => browserAt(url).request(viaPublicUrl(started.data.url!)))
      const signedIn = yield* consentAndCallBack(url, toGitHub.headers.get("location")!)
      expect(decodeJwt(signedIn.fragment.get("access_token")!).payload["sub"]).toBe(id)

      const unlinked = yield* call(() => client.unlinkIdentity(linked))
      expect(unlinked.error).toBeNull()
      expect((yield* identitiesOf(client)).map((identity) => identity.provider)).toEqual(["email"])
      const { data: afterUnlink } = yield* call(() => client.getUser())
      expect(afterUnlink.user).toMatchObject({ email, app_metadata: { providers: ["email"] } })

      const last = (yield* identitiesOf(client))[0]!
      const refused = yield* call(() => client.unlinkIdentity(last))
      expect(refused.error).toMatchObject({ status: 422, code: "single_identity_not_deletable" })
      expect(yield* identitiesOf(client)).toHaveLength(1)

      // The unlinked github account is nobody's now: signing in with it makes a new user.
      const again = yield* call(() => other.signInWithOAuth({ provider: "github", options: { skipBrowserRedirect: true } }))
      const toGitHubAgain = yield* call(() => browserAt(url).request(viaPublicUrl(again.data.url!)))
      const fresh = yield* consentAndCallBack(url, toGitHubAgain.headers.get("location")!)
      expect(decodeJwt(fresh.fragment.get("access_token")!).payload["sub"]).not.toBe(id)
    }))

  it.effect("a github identity another user holds is refused, and the caller keeps what it had", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const owner = yield* passwordUser(url)
      githubAccount(uniqueEmail("shared"))
      expect((yield* linkGitHub(url, owner.client)).fragment.get("error")).toBeNull()

      const intruder = yield* passwordUser(url)
      const { fragment } = yield* linkGitHub(url, intruder.client)
      expect(fragment.get("access_token")).toBeNull()
      expect(fragment.get("error_code")).toBe("identity_already_exists")
      expect(fragment.get("error_description")).toBe("Identity is already linked to another user")
      expect((yield* identitiesOf(intruder.client)).map((identity) => identity.provider)).toEqual(["email"])
      expect((yield* identitiesOf(owner.client)).map((identity) => identity.provider)).toEqual(["email", "github"])

      // Linking the same account again to its owner is refused too.
      const twice = yield* linkGitHub(url, owner.client)
      expect(twice.fragment.get("error_code")).toBe("identity_already_exists")
      expect(twice.fragment.get("error_description")).toBe("Identity is already linked")
    }))

  it.effect("another user's identity, or an unknown one, is not found; a malformed id is a validation error", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const owner = yield* passwordUser(url)
      githubAccount(uniqueEmail("mine"))
      yield* linkGitHub(url, owner.client)
      const ownersGithub = (yield* identitiesOf(owner.client)).find((identity) => identity.provider === "github")!

      const caller = yield* passwordUser(url)
      githubAccount(uniqueEmail("theirs"))
      yield* linkGitHub(url, caller.client)
      const foreign = yield* call(() => caller.client.unlinkIdentity(ownersGithub))
      expect(foreign.error).toMatchObject({ status: 422, code: "identity_not_found" })
      const unknown = yield* call(() => caller.client.unlinkIdentity({ ...ownersGithub, identity_id: randomUUID() }))
      expect(unknown.error).toMatchObject({ status: 422, code: "identity_not_found" })
      expect(yield* identitiesOf(owner.client)).toHaveLength(2)

      const { data } = yield* call(() => caller.client.getSession())
      const malformed = yield* raw(url, "/user/identities/not-a-uuid", { method: "DELETE", bearer: data.session!.access_token, apiVersion: true })
      expect(malformed.status).toBe(404)
      expect(malformed.json).toMatchObject({ code: "validation_failed" })
    }))

  it.effect("unlinking the identity that holds the user's address moves the user to a remaining identity's address", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client, id } = yield* passwordUser(url)
      const githubEmail = uniqueEmail("moved")
      githubAccount(githubEmail)
      yield* linkGitHub(url, client)
      const emailIdentity = (yield* identitiesOf(client)).find((identity) => identity.provider === "email")!
      expect((yield* call(() => client.unlinkIdentity(emailIdentity))).error).toBeNull()
      const { data } = yield* call(() => client.getUser())
      expect(data.user).toMatchObject({ id, email: githubEmail, app_metadata: { providers: ["github"] } })
      // GitHub verified the address, so it stays confirmed.
      expect(data.user?.email_confirmed_at).toBeTruthy()
    }))

  it.effect("GET /user/identities/authorize without skip_http_redirect answers 302 to the provider; without a token, 401", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = yield* passwordUser(url)
      const { data } = yield* call(() => client.getSession())
      const response = yield* call(() =>
        fetch(`${url}/auth/v1/user/identities/authorize?provider=github`, {
          redirect: "manual",
          headers: { authorization: `Bearer ${data.session!.access_token}` }
        }))
      expect(response.status).toBe(302)
      // Through the browser, as for linkIdentity: the flow is bound to it on the way to GitHub.
      const onward = yield* call(() => browserAt(url).request(response.headers.get("location")!))
      const toGitHub = new URL(onward.headers.get("location")!)
      expect(toGitHub.pathname).toBe("/login/oauth/authorize")
      expect(toGitHub.searchParams.get("skip_http_redirect")).toBeNull()

      const anonymous = yield* raw(url, "/user/identities/authorize?provider=github&skip_http_redirect=true", { apiVersion: true })
      expect(anonymous.status).toBe(401)
      const unknown = yield* raw(url, "/user/identities/authorize?provider=nope&skip_http_redirect=true", {
        apiVersion: true,
        bearer: data.session!.access_token
      })
      expect(unknown.status).toBe(400)
      expect(unknown.json).toMatchObject({ code: "validation_failed" })
    }))
})

acceptance({ ...ENABLED, AUTH_SECURITY_MANUAL_LINKING_ENABLED: "false" })("manual linking off", (it) => {
  it.effect("linkIdentity and unlinkIdentity get 404 manual_linking_disabled", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = yield* passwordUser(url)
      const link = yield* call(() => client.linkIdentity({ provider: "github" }))
      expect(link.data.url).toBeNull()
      expect(link.error).toMatchObject({ status: 404, code: "manual_linking_disabled" })
      const [identity] = yield* identitiesOf(client)
      const unlink = yield* call(() => client.unlinkIdentity(identity!))
      expect(unlink.error).toMatchObject({ status: 404, code: "manual_linking_disabled" })
      expect(yield* identitiesOf(client)).toHaveLength(1)
    }))
})
