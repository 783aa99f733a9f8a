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
import { MemoryMailer } from "../../../src/platform/Mailer.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { MemorySmsSender } from "../../../src/platform/SmsSender.js"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { External } from "../../../src/auth/external/External.js"
import { type OAuthProvider, ProviderFailure, type ProviderProfile } from "../../../src/auth/external/OAuthProvider.js"
import { OAuthProvidersTest } from "../../../src/auth/external/OAuthProviders.js"
import { challengeOf } from "../../../src/auth/domain/Pkce.js"
import { AccessTokens } from "../../../src/auth/sessions/AccessTokens.js"
import { FlowStateRepo } from "../../../src/auth/sessions/FlowStateRepo.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { ExternalAccounts } from "../../../src/auth/users/ExternalAccounts.js"
import { IdentitiesRepo } from "../../../src/auth/users/IdentitiesRepo.js"
import { IdentityLinks } from "../../../src/auth/users/IdentityLinks.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"
import { AppConfig } from "../../../src/config/AppConfig.js"
import { tokenSignerFor } from "../../../src/platform/PortsLive.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { testConfig } from "../../support/TestServer.js"
import { MemoryRepos } from "../support/MemoryRepos.js"

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

const config = testConfig()
const Over = External.DefaultWithoutDependencies.pipe(
  Layer.provideMerge(OAuthProvidersTest([scripted])),
  Layer.provideMerge(ExternalAccounts.DefaultWithoutDependencies),
  Layer.provideMerge(IdentityLinks.DefaultWithoutDependencies),
  Layer.provideMerge(AccessTokens.DefaultWithoutDependencies),
  Layer.provideMerge(Sessions.DefaultWithoutDependencies),
  Layer.provideMerge(Users.DefaultWithoutDependencies),
  Layer.provideMerge(AuthMessages.DefaultWithoutDependencies.pipe(Layer.provide(MailTemplates.Default))),
  Layer.provideMerge(PendingTokens.DefaultWithoutDependencies),
  Layer.provideMerge(AccountReclaim.DefaultWithoutDependencies),
  Layer.provideMerge(AuditLog.DefaultWithoutDependencies),
  Layer.provideMerge(MemoryRepos()),
  Layer.provideMerge(Layer.mergeAll(
    Layer.orDie(tokenSignerFor(config)),
    MemoryMailer,
    MemorySmsSender,
    SecureRandom.Test,
    Transactions.Test,
    Layer.succeed(AppConfig, config)
  ))
)

const stateOf = (location: string) => new URL(location).searchParams.get("state")!
const fragmentOf = (location: string) => new URLSearchParams(new URL(location).hash.slice(1))

layer(Over)("External over memory", (it) => {
  it.effect("the exchange sends the verifier whose challenge went to the provider", () =>
    Effect.gen(function*() {
      const external = yield* External
      script.profile = profile("v-user")
      const toProvider = yield* external.authorize({ provider: "keycloak" })
      const location = yield* external.callback({ state: stateOf(toProvider), code: "c" })
      expect(fragmentOf(location).get("provider_token")).toBe("provider-at")
      expect(fragmentOf(location).get("provider_refresh_token")).toBe("provider-rt")
      const verifier = script.verifiers.at(-1)!
      expect(challengeOf(verifier, "s256")).toBe(new URL(toProvider).searchParams.get("code_challenge"))
    }))

  it.effect("a failing provider ends in server_error, and the state is spent", () =>
    Effect.gen(function*() {
      const external = yield* External
      script.profile = "fail"
      const state = stateOf(yield* external.authorize({ provider: "keycloak", redirectTo: "http://localhost:3000/x" }))
      const failed = fragmentOf(yield* external.callback({ state, code: "c" }))
      expect(Object.fromEntries(failed)).toEqual({
        error: "server_error",
        error_code: "unexpected_failure",
        error_description: "Error getting user profile from external provider",
        sb: ""
      })
      script.profile = profile("late")
      expect(fragmentOf(yield* external.callback({ state, code: "c" })).get("error_code")).toBe("bad_oauth_state")
    }))

  it.effect("a banned user is refused at the callback", () =>
    Effect.gen(function*() {
      const external = yield* External
      const users = yield* UsersRepo
      script.profile = profile("banned")
      const first = fragmentOf(yield* external.callback({ state: stateOf(yield* external.authorize({ provider: "keycloak" })), code: "c" }))
      const { sub } = JSON.parse(Buffer.from(first.get("access_token")!.split(".")[1]!, "base64url").toString())
      yield* users.update(sub, { banned_until: new Date(Date.UTC(2100, 0, 1)) }, new Date(0)).pipe(Effect.orDie)
      const second = fragmentOf(yield* external.callback({ state: stateOf(yield* external.authorize({ provider: "keycloak" })), code: "c" }))
      expect(second.get("access_token")).toBeNull()
      expect(second.get("error")).toBe("access_denied")
      expect(second.get("error_code")).toBe("user_banned")
    }))

  it.effect("301 seconds after /authorize the flow has expired; 300 seconds after it has not", () =>
    Effect.gen(function*() {
      const external = yield* External
      script.profile = profile("slow")
      const late = stateOf(yield* external.authorize({ provider: "keycloak" }))
      yield* TestClock.adjust("300 seconds")
      const inTime = stateOf(yield* external.authorize({ provider: "keycloak" }))
      yield* TestClock.adjust("1 second")
      expect(fragmentOf(yield* external.callback({ state: late, code: "c" })).get("error_code")).toBe("flow_state_expired")
      expect(fragmentOf(yield* external.callback({ state: inTime, code: "c" })).get("access_token")).toBeTruthy()
    }))

  it.effect("PKCE: the callback hands out the app's code, now bound to the user and the provider's tokens", () =>
    Effect.gen(function*() {
      const external = yield* External
      const flows = yield* FlowStateRepo
      script.profile = profile("pkce")
      const challenge = "x".repeat(43)
      const state = stateOf(yield* external.authorize({ provider: "keycloak", codeChallenge: challenge, codeChallengeMethod: "plain" }))
      const location = new URL(yield* external.callback({ state, code: "c" }))
      expect(location.hash).toBe("")
      const code = location.searchParams.get("code")!
      const flow = Option.getOrThrow(yield* flows.findByAuthCode(code))
      expect(flow).toMatchObject({ code_challenge: challenge, code_challenge_method: "plain", provider_type: "keycloak", provider_access_token: "provider-at" })
      expect(flow.user_id).not.toBeNull()
    }))

  it.effect("a linking flow adds the identity to its user (here through PKCE), and fails once that user is gone", () =>
    Effect.gen(function*() {
      const external = yield* External
      const flows = yield* FlowStateRepo
      const users = yield* UsersRepo
      const identities = yield* IdentitiesRepo
      script.profile = profile("link-target")
      const signedIn = fragmentOf(yield* external.callback({ state: stateOf(yield* external.authorize({ provider: "keycloak" })), code: "c" }))
      const { sub } = JSON.parse(Buffer.from(signedIn.get("access_token")!.split(".")[1]!, "base64url").toString())

      // The same provider under another subject: a second account at the same IdP, linked rather than signed up.
      script.profile = profile("link-second")
      const challenge = "y".repeat(43)
      const state = stateOf(yield* external.authorize({ provider: "keycloak", codeChallenge: challenge, codeChallengeMethod: "plain" }, sub))
      const code = new URL(yield* external.callback({ state, code: "c" })).searchParams.get("code")!
      expect(Option.getOrThrow(yield* flows.findByAuthCode(code)).user_id).toBe(sub)
      // Both made at the same TestClock instant, so their order is the ids' (random): compare as a set.
      expect((yield* identities.forUser(sub)).map((row) => row.provider_id).sort()).toEqual(["link-second", "link-target"])

      yield* users.remove(sub)
      script.profile = profile("link-third")
      const gone = fragmentOf(yield* external.callback({ state: stateOf(yield* external.authorize({ provider: "keycloak" }, sub)), code: "c" }))
      expect(gone.get("access_token")).toBeNull()
      expect(gone.get("error_code")).toBe("user_not_found")
      expect(Option.isNone(yield* identities.findByProvider("keycloak", "link-third"))).toBe(true)
    }))
})
