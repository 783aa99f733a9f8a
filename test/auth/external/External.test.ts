/**
 * The External service over the in-memory repos and a scripted provider (the OAuthProviders port's Test layer), on
 * the TestClock: what the callback does when the provider fails, when the user is banned, when time runs out, and
 * that the verifier stored at /authorize is the one the code exchange sends, and where a linking flow's identity goes.
 */
import { AuthMessages } from "../../../src/auth/messages/AuthMessages.js"
import { MailTemplates } from "../../../src/auth/messages/MailTemplates.js"
import { AccountReclaim } from "../../../src/auth/users/AccountReclaim.js"
import { PendingTokens } from "../../../src/auth/users/PendingTokens.js"
import { Users } from "../../../src/auth/users/Users.js"
import { MemoryMailer } from "../../../src/platform/mail/Mailer.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { MemorySmsSender } from "../../../src/platform/sms/SmsSender.js"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { type AuthorizeQuery, type BrowserRedirect, type CallbackQuery, External } from "../../../src/auth/external/External.js"
import { type OAuthProvider, ProviderFailure, type ProviderProfile } from "../../../src/auth/oauth/OAuthProvider.js"
import { OAuthProvidersTest } from "../../../src/auth/oauth/OAuthProviders.js"
import { challengeOf } from "../../../src/auth/domain/Pkce.js"
import { AccessTokens } from "../../../src/auth/sessions/AccessTokens.js"
import { FlowStateRepo } from "../../../src/auth/sessions/FlowStateRepo.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { ExternalAccounts } from "../../../src/auth/users/ExternalAccounts.js"
import { IdentitiesRepo } from "../../../src/auth/users/IdentitiesRepo.js"
import { IdentityLinks } from "../../../src/auth/users/IdentityLinks.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { tokenSignerFor } from "../../../src/platform/PortsLive.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { testConfig } from "../../support/TestServer.js"
import { MemoryRepos } from "../support/MemoryRepos.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

interface Script {
  profile: ProviderProfile | "fail"
  readonly verifiers: Array<string | null>
}

const script: Script = { profile: "fail", verifiers: [] }

const scripted: OAuthProvider = {
  name: "keycloak",
  usesPkce: true,
  authorizationUrl: ({ codeVerifier, state }) => {
    const url = new URL("https://idp.example.com/auth")
    url.searchParams.set("state", state)
    if (codeVerifier !== null) url.searchParams.set("code_challenge", challengeOf(codeVerifier, "s256"))
    return url
  },
  exchange: (_code, verifier) => Effect.sync(() => script.verifiers.push(verifier)).pipe(Effect.as({ accessToken: "provider-at", refreshToken: "provider-rt" })),
  profile: () =>
    script.profile === "fail"
      ? Effect.fail(new ProviderFailure({ step: "profile", reason: "userinfo answered 500" }))
      : Effect.succeed(script.profile)
}

const profile = (sub: string): ProviderProfile => ({
  providerId: sub,
  email: `${sub}@example.com`,
  emailVerified: true,
  name: sub,
  avatarUrl: null,
  claims: { iss: "https://idp.example.com" }
})

const OverWith = (env: Record<string, string>) => {
  const config = testConfig(env)
  return External.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(OAuthProvidersTest([scripted])),
    Layer.provideMerge(ExternalAccounts.DefaultWithoutDependencies),
    Layer.provideMerge(IdentityLinks.DefaultWithoutDependencies),
    Layer.provideMerge(AccessTokens.DefaultWithoutDependencies),
    Layer.provideMerge(Sessions.DefaultWithoutDependencies),
    Layer.provideMerge(Users.DefaultWithoutDependencies),
    Layer.provideMerge(AuthMessages.DefaultWithoutDependencies.pipe(Layer.provide(MailTemplates.Default))),
    Layer.provideMerge(AccountReclaim.DefaultWithoutDependencies),
    Layer.provideMerge(PendingTokens.DefaultWithoutDependencies),
    Layer.provideMerge(AuditLog.DefaultWithoutDependencies),
    Layer.provideMerge(CurrentClient.Default),
    Layer.provideMerge(MemoryRepos()),
    Layer.provideMerge(Layer.mergeAll(
      Layer.orDie(tokenSignerFor(config)),
      MemoryMailer,
      MemorySmsSender,
      SecureRandom.Test,
      Transactions.Test,
      configLayer(config)
    ))
  )
}
const Over = OverWith({})

const stateOf = (location: string) => new URL(location).searchParams.get("state")!
const fragmentOf = (location: string) => new URLSearchParams(new URL(location).hash.slice(1))

/**
 * One browser, as the HTTP edge carries its binding cookie: whatever binding a start hands out, presented on every
 * later call. A linking flow goes the way a browser takes it: the URL the API hands out, /authorize/continue, which
 * binds it to this browser and leads on to the provider.
 */
const browser = () => {
  let cookie: string | undefined
  const keep = (redirect: BrowserRedirect) => {
    if (Option.isSome(redirect.binding)) cookie = redirect.binding.value
    return redirect.location
  }
  return {
    cookie: () => cookie,
    authorize: (query: AuthorizeQuery, linkingTargetId?: string) =>
      Effect.gen(function*() {
        const external = yield* External
        if (linkingTargetId === undefined) return keep(yield* external.authorize(query, cookie))
        const toContinue = yield* external.startLink(query, linkingTargetId)
        return keep(yield* external.continueLink(stateOf(toContinue), cookie))
      }),
    callback: (query: CallbackQuery) => Effect.flatMap(External, (external) => external.callback(query, cookie))
  }
}

layer(Over)("External over memory", (it) => {
  const tab = browser()

  it.effect("the exchange sends the verifier whose challenge went to the provider", () =>
    Effect.gen(function*() {
      script.profile = profile("v-user")
      const toProvider = yield* tab.authorize({ provider: "keycloak" })
      const location = yield* tab.callback({ state: stateOf(toProvider), code: "c" })
      expect(fragmentOf(location).get("provider_token")).toBe("provider-at")
      expect(fragmentOf(location).get("provider_refresh_token")).toBe("provider-rt")
      const verifier = script.verifiers.at(-1)!
      expect(challengeOf(verifier, "s256")).toBe(new URL(toProvider).searchParams.get("code_challenge"))
    }))

  it.effect("a failing provider ends in server_error, and the state is spent", () =>
    Effect.gen(function*() {
      script.profile = "fail"
      const state = stateOf(yield* tab.authorize({ provider: "keycloak", redirectTo: "http://localhost:3000/x" }))
      const failed = fragmentOf(yield* tab.callback({ state, code: "c" }))
      expect(Object.fromEntries(failed)).toEqual({
        error: "server_error",
        error_code: "unexpected_failure",
        error_description: "Error getting user profile from external provider",
        sb: ""
      })
      script.profile = profile("late")
      expect(fragmentOf(yield* tab.callback({ state, code: "c" })).get("error_code")).toBe("bad_oauth_state")
    }))

  it.effect("a banned user is refused at the callback", () =>
    Effect.gen(function*() {
      const users = yield* UsersRepo
      script.profile = profile("banned")
      const first = fragmentOf(yield* tab.callback({ state: stateOf(yield* tab.authorize({ provider: "keycloak" })), code: "c" }))
      const { sub } = JSON.parse(Buffer.from(first.get("access_token")!.split(".")[1]!, "base64url").toString())
      yield* users.update(sub, { banned_until: new Date(Date.UTC(2100, 0, 1)) }, new Date(0)).pipe(Effect.orDie)
      const second = fragmentOf(yield* tab.callback({ state: stateOf(yield* tab.authorize({ provider: "keycloak" })), code: "c" }))
      expect(second.get("access_token")).toBeNull()
      expect(second.get("error")).toBe("access_denied")
      expect(second.get("error_code")).toBe("user_banned")
    }))

  it.effect("301 seconds after /authorize the flow has expired; 300 seconds after it has not", () =>
    Effect.gen(function*() {
      script.profile = profile("slow")
      const late = stateOf(yield* tab.authorize({ provider: "keycloak" }))
      yield* TestClock.adjust("300 seconds")
      const inTime = stateOf(yield* tab.authorize({ provider: "keycloak" }))
      yield* TestClock.adjust("1 second")
      expect(fragmentOf(yield* tab.callback({ state: late, code: "c" })).get("error_code")).toBe("flow_state_expired")
      expect(fragmentOf(yield* tab.callback({ state: inTime, code: "c" })).get("access_token")).toBeTruthy()
    }))

  it.effect("PKCE: the callback hands out the app's code, now bound to the user and the provider's tokens", () =>
    Effect.gen(function*() {
      const flows = yield* FlowStateRepo
      script.profile = profile("pkce")
      const challenge = "x".repeat(43)
      const state = stateOf(yield* tab.authorize({ provider: "keycloak", codeChallenge: challenge, codeChallengeMethod: "plain" }))
      const location = new URL(yield* tab.callback({ state, code: "c" }))
      expect(location.hash).toBe("")
      const code = location.searchParams.get("code")!
      const flow = Option.getOrThrow(yield* flows.findByAuthCode(code))
      expect(flow).toMatchObject({ code_challenge: challenge, code_challenge_method: "plain", provider_type: "keycloak", provider_access_token: "provider-at" })
      expect(flow.user_id).not.toBeNull()
    }))

  it.effect("a linking flow adds the identity to its user (here through PKCE), and fails once that user is gone", () =>
    Effect.gen(function*() {
      const flows = yield* FlowStateRepo
      const users = yield* UsersRepo
      const identities = yield* IdentitiesRepo
      script.profile = profile("link-target")
      const signedIn = fragmentOf(yield* tab.callback({ state: stateOf(yield* tab.authorize({ provider: "keycloak" })), code: "c" }))
      const { sub } = JSON.parse(Buffer.from(signedIn.get("access_token")!.split(".")[1]!, "base64url").toString())

      // The same provider under another subject: a second account at the same IdP, linked rather than signed up.
      script.profile = profile("link-second")
      const challenge = "y".repeat(43)
      const state = stateOf(yield* tab.authorize({ provider: "keycloak", codeChallenge: challenge, codeChallengeMethod: "plain" }, sub))
      const code = new URL(yield* tab.callback({ state, code: "c" })).searchParams.get("code")!
      expect(Option.getOrThrow(yield* flows.findByAuthCode(code)).user_id).toBe(sub)
      // Both made at the same TestClock instant, so their order is the ids' (random): compare as a set.
      expect((yield* identities.forUser(sub)).map((row) => row.provider_id).sort()).toEqual(["link-second", "link-target"])

      yield* users.remove(sub)
      script.profile = profile("link-third")
      const gone = fragmentOf(yield* tab.callback({ state: stateOf(yield* tab.authorize({ provider: "keycloak" }, sub)), code: "c" }))
      expect(gone.get("access_token")).toBeNull()
      expect(gone.get("error_code")).toBe("user_not_found")
      expect(Option.isNone(yield* identities.findByProvider("keycloak", "link-third"))).toBe(true)
    }))
})

/** The user a finished sign-in made, by the subject in its access token. */
const subOf = (fragment: URLSearchParams): string =>
  JSON.parse(Buffer.from(fragment.get("access_token")!.split(".")[1]!, "base64url").toString()).sub

layer(Over)("External over memory: the state bound to the browser", (it) => {
  it.effect("a callback without the binding cookie, or with another browser's, is refused, creates nothing, and spends nothing", () =>
    Effect.gen(function*() {
      const external = yield* External
      const users = yield* UsersRepo
      script.profile = profile("bound")
      const victim = browser()
      const attacker = browser()
      const state = stateOf(yield* victim.authorize({ provider: "keycloak", redirectTo: "http://localhost:3000/x" }))
      yield* attacker.authorize({ provider: "keycloak" })
      expect(attacker.cookie()).not.toBe(victim.cookie())
      for (const stranger of [undefined, "not-a-binding", attacker.cookie()]) {
        const refused = fragmentOf(yield* external.callback({ state, code: "c" }, stranger))
        expect(Object.fromEntries(refused)).toEqual({
          error: "invalid_request",
          error_code: "bad_oauth_state",
          error_description: "OAuth callback from a browser that did not start the sign-in: start it again in this browser",
          sb: ""
        })
      }
      expect(Option.isNone(yield* users.findByEmail("bound@example.com", "authenticated"))).toBe(true)
      // The flow was left for its own browser, which finishes it.
      const signedIn = fragmentOf(yield* victim.callback({ state, code: "c" }))
      expect(signedIn.get("access_token")).toBeTruthy()
    }))

  it.effect("two tabs of one browser share its binding: both flows finish, in either order", () =>
    Effect.gen(function*() {
      const tabs = browser()
      script.profile = profile("two-tabs")
      const first = stateOf(yield* tabs.authorize({ provider: "keycloak" }))
      const binding = tabs.cookie()
      const second = stateOf(yield* tabs.authorize({ provider: "keycloak" }))
      expect(tabs.cookie()).toBe(binding)
      expect(fragmentOf(yield* tabs.callback({ state: second, code: "c" })).get("access_token")).toBeTruthy()
      expect(fragmentOf(yield* tabs.callback({ state: first, code: "c" })).get("access_token")).toBeTruthy()
    }))

  it.effect("a linking flow waits for its browser: the first browser to open /authorize/continue binds it, once", () =>
    Effect.gen(function*() {
      const external = yield* External
      const identities = yield* IdentitiesRepo
      const owner = browser()
      script.profile = profile("link-owner")
      const sub = subOf(fragmentOf(yield* owner.callback({ state: stateOf(yield* owner.authorize({ provider: "keycloak" })), code: "c" })))

      script.profile = profile("link-other")
      const toContinue = new URL(yield* external.startLink({ provider: "keycloak" }, sub))
      expect(`${toContinue.origin}${toContinue.pathname}`).toBe("http://localhost:9999/authorize/continue")
      const state = toContinue.searchParams.get("state")!
      // Not yet bound: no browser's callback claims it.
      expect(fragmentOf(yield* owner.callback({ state, code: "c" })).get("error_code")).toBe("bad_oauth_state")
      const continued = yield* external.continueLink(state, owner.cookie())
      expect(continued.binding).toEqual(Option.some(owner.cookie()))
      expect(stateOf(continued.location)).toBe(state)
      // A second visit (another browser, or the same one again) finds nothing to bind.
      const again = yield* external.continueLink(state, undefined)
      expect(again.binding).toEqual(Option.none())
      expect(fragmentOf(again.location).get("error_code")).toBe("bad_oauth_state")
      expect(fragmentOf(yield* external.callback({ state, code: "c" }, browser().cookie())).get("error_code")).toBe("bad_oauth_state")
      expect(Option.isNone(yield* identities.findByProvider("keycloak", "link-other"))).toBe(true)
      expect(fragmentOf(yield* owner.callback({ state, code: "c" })).get("access_token")).toBeTruthy()
      expect(Option.map(yield* identities.findByProvider("keycloak", "link-other"), (row) => row.user_id)).toEqual(Option.some(sub))
    }))

  it.effect("/authorize/continue 301 seconds after the link started is too late; a malformed or unknown state is refused", () =>
    Effect.gen(function*() {
      const external = yield* External
      const owner = browser()
      script.profile = profile("late-link-owner")
      const sub = subOf(fragmentOf(yield* owner.callback({ state: stateOf(yield* owner.authorize({ provider: "keycloak" })), code: "c" })))
      const state = new URL(yield* external.startLink({ provider: "keycloak" }, sub)).searchParams.get("state")!
      yield* TestClock.adjust("301 seconds")
      expect(fragmentOf((yield* external.continueLink(state, owner.cookie())).location).get("error_code")).toBe("flow_state_expired")
      for (const bad of [undefined, "", "not-a-uuid", "00000000-0000-4000-8000-000000000000"]) {
        expect(fragmentOf((yield* external.continueLink(bad, owner.cookie())).location).get("error_code")).toBe("bad_oauth_state")
      }
    }))
})

layer(OverWith({ AUTH_SECURITY_OAUTH_BROWSER_BINDING_ENABLED: "false" }))("External over memory: browser binding off (GoTrue)", (it) => {
  it.effect("no binding is handed out, any browser's callback finishes the flow, and a link goes straight to the provider", () =>
    Effect.gen(function*() {
      const external = yield* External
      const identities = yield* IdentitiesRepo
      script.profile = profile("unbound")
      const started = yield* external.authorize({ provider: "keycloak" }, undefined)
      expect(started.binding).toEqual(Option.none())
      const sub = subOf(fragmentOf(yield* external.callback({ state: stateOf(started.location), code: "c" }, undefined)))
      script.profile = profile("unbound-link")
      const toProvider = new URL(yield* external.startLink({ provider: "keycloak" }, sub))
      expect(toProvider.origin).toBe("https://idp.example.com")
      expect(fragmentOf(yield* external.callback({ state: toProvider.searchParams.get("state")!, code: "c" }, "someone-elses")).get("access_token")).toBeTruthy()
      expect(Option.map(yield* identities.findByProvider("keycloak", "unbound-link"), (row) => row.user_id)).toEqual(Option.some(sub))
      // The continue hop has nothing to do.
      expect(fragmentOf((yield* external.continueLink(toProvider.searchParams.get("state")!, undefined)).location).get("error_code")).toBe("bad_oauth_state")
    }))
})
