import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, TestClock } from "effect"
import { configLayer } from "../../src/config/AppConfig.js"
import { Authority, OPERATOR } from "../../src/iam/access/Authority.js"
import { IamPolicy } from "../../src/iam/access/IamPolicy.js"
import { IamPolicyRules } from "../../src/iam/access/IamPolicyRules.js"
import { LAST_ADMIN, Roles } from "../../src/iam/access/Roles.js"
import { RolesRepo } from "../../src/iam/store/RolesRepo.js"
import { Accounts } from "../../src/iam/accounts/Accounts.js"
import { AccountsRepo } from "../../src/iam/store/AccountsRepo.js"
import { LoginThrottle } from "../../src/iam/accounts/LoginThrottle.js"
import { LoginThrottleRepo } from "../../src/iam/store/LoginThrottleRepo.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import type { IamError } from "../../src/iam/domain/IamError.js"
import { IamSql } from "../../src/iam/IamSql.js"
import { OAuthIdentities } from "../../src/iam/oauth/OAuthIdentities.js"
import { OAuthSignIn } from "../../src/iam/oauth/OAuthSignIn.js"
import { NOT_LINKED, NOT_THE_LINKER } from "../../src/iam/domain/OAuthFlowRules.js"
import { OAuthFlowsRepo } from "../../src/iam/store/OAuthFlowsRepo.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"
import { PasswordHasherTest } from "../../src/platform/PasswordHasher.js"
import { PolicyTest } from "../../src/platform/Policy.js"
import { Transactions } from "../../src/platform/sql/Transactions.js"
import { testConfig } from "../support/TestServer.js"
import { iamTestEnv } from "./support/IamTestServer.js"

/**
 * Accounts and Roles over the in-memory repos (Repos.test.ts holds them to the SQL ones): their rules, with
 * no database. Each test gets fresh repos.
 */
const config = testConfig(iamTestEnv())

const Ports = Layer.mergeAll(Transactions.Test, IamSql.Test, PasswordHasherTest, configLayer(config))
const Repos = RolesRepo.Test.pipe(Layer.provideMerge(AccountsRepo.Test))

const Services = Layer.mergeAll(Accounts.layer, Roles.layer).pipe(
  Layer.provideMerge(Authority.layer),
  Layer.provideMerge(LoginThrottle.layer),
  Layer.provideMerge(LoginThrottleRepo.Test),
  Layer.provideMerge(IamPolicy.layer),
  Layer.provideMerge(IamPolicy.engine),
  Layer.provideMerge(IamPolicyRules.Default),
  Layer.provideMerge(Repos),
  Layer.provideMerge(Ports)
)

const failure = <A, R>(effect: Effect.Effect<A, IamError, R>) => Effect.map(Effect.flip(effect), ({ code, message }) => ({ code, message }))

const register = (username: string, email = `${username}@example.com`) =>
  Effect.flatMap(Accounts, (accounts) => accounts.register({ username, email, password: Redacted.make(`${username} password`) }))

describe("IAM services over the Test repos", () => {
  it.effect("registration: a taken username or email is ALREADY_EXISTS without saying which", () =>
    Effect.gen(function*() {
      yield* register("ann")
      const taken = { code: "already_exists", message: "username or email is already registered" }
      expect(yield* failure(register("ann", "other@example.com"))).toEqual(taken)
      expect(yield* failure(register("ann2", "ann@example.com"))).toEqual(taken)
    }).pipe(Effect.provide(Services)))

  it.effect("login: by username or email with the right password; anything else is the same UNAUTHENTICATED", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const ann = yield* register("ann")
      expect(ann).not.toHaveProperty("passwordHash")
      expect((yield* accounts.login({ username: "ann" }, Redacted.make("ann password"))).id).toBe(ann.id)
      expect((yield* accounts.login({ email: "ann@example.com" }, Redacted.make("ann password"))).id).toBe(ann.id)
      const refused = { code: "unauthenticated", message: "invalid credentials" }
      expect(yield* failure(accounts.login({ username: "ann" }, Redacted.make("wrong password")))).toEqual(refused)
      expect(yield* failure(accounts.login({ username: "nobody" }, Redacted.make("ann password")))).toEqual(refused)
    }).pipe(Effect.provide(Services)))

  it.effect("login throttle: five failures, then even the right password waits; waited out it signs in; a client's failures are its own", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      yield* register("ann")
      const attempt = (password: string, client?: string) =>
        Effect.map(Effect.either(accounts.login({ username: "Ann" }, Redacted.make(password), client)), (result) =>
          result._tag === "Right" ? "ok" : result.left.code === "resource_exhausted" ? `wait ${result.left.retryAfter}` : result.left.code)
      for (let i = 0; i < 5; i++) expect(yield* attempt("wrong password")).toBe("unauthenticated")
      expect(yield* attempt("ann password")).toBe("wait 1")
      yield* TestClock.adjust("1 second")
      expect(yield* attempt("wrong password")).toBe("unauthenticated")
      expect(yield* attempt("ann password", "10.0.0.1")).toBe("wait 2")
      yield* TestClock.adjust("2 seconds")
      expect(yield* attempt("ann password", "10.0.0.1")).toBe("ok")
      expect(yield* attempt("wrong password")).toBe("unauthenticated")
    }).pipe(Effect.provide(Services)))

  it.effect("a role for a missing user, or a missing role, is NOT_FOUND", () =>
    Effect.gen(function*() {
      const roles = yield* Roles
      const ann = yield* register("ann")
      const role = yield* roles.createRole("clerk", null)
      expect((yield* failure(roles.assign(OPERATOR, ann.id + 1, role.id))).code).toBe("not_found")
      expect((yield* failure(roles.assign(OPERATOR, ann.id, role.id + 1))).code).toBe("not_found")
      expect(yield* failure(roles.rolesOf(ann.id + 1))).toEqual({ code: "not_found", message: "user not found" })
      expect(yield* failure(roles.permissionsOf(role.id + 1))).toEqual({ code: "not_found", message: "role not found" })
      expect(yield* failure(roles.deletePermission(OPERATOR, 1))).toEqual({ code: "not_found", message: "permission not found" })
      expect(yield* roles.rolesOf(ann.id)).toEqual([])
    }).pipe(Effect.provide(Services)))

  it.effect("a change is enforced at once, and deleting a role removes its links and what they allowed", () =>
    Effect.gen(function*() {
      const roles = yield* Roles
      const accounts = yield* Accounts
      const policy = yield* IamPolicy
      const ann = yield* register("ann")
      const role = yield* roles.createRole("clerk", null)
      const permission = yield* roles.createPermission({ name: "delete orders", description: null, resource: "ORDER", action: "DELETE" })
      yield* roles.grant(OPERATOR, role.id, permission.id)
      expect(yield* policy.enforce(ann.id, "ORDER", "DELETE")).toBe(false)
      yield* roles.assign(OPERATOR, ann.id, role.id)
      expect(yield* policy.enforce(ann.id, "ORDER", "DELETE")).toBe(true)
      expect(yield* accounts.roleNames(ann.id)).toEqual(["clerk"])
      expect((yield* roles.permissionsOf(role.id)).map((p) => p.name)).toEqual(["delete orders"])

      yield* roles.deleteRole(OPERATOR, role.id)
      expect(yield* policy.enforce(ann.id, "ORDER", "DELETE")).toBe(false)
      expect(yield* roles.rolesOf(ann.id)).toEqual([])
      expect(yield* accounts.roleNames(ann.id)).toEqual([])
      expect(yield* failure(roles.deleteRole(OPERATOR, role.id))).toEqual({ code: "not_found", message: "role not found" })
    }).pipe(Effect.provide(Services)))

  it.effect("revoking a grant is enforced at once; the policy version moves with every change", () =>
    Effect.gen(function*() {
      const roles = yield* Roles
      const repo = yield* RolesRepo
      const policy = yield* IamPolicy
      const ann = yield* register("ann")
      const role = yield* roles.createRole("reader", null)
      const permission = yield* roles.createPermission({ name: "read users", description: null, resource: "USER", action: "READ" })
      const before = Number(yield* repo.policyVersion)
      yield* roles.assign(OPERATOR, ann.id, role.id)
      yield* roles.grant(OPERATOR, role.id, permission.id)
      expect(yield* policy.enforce(ann.id, "USER", "READ")).toBe(true)
      yield* roles.revoke(OPERATOR, role.id, permission.id)
      expect(yield* policy.enforce(ann.id, "USER", "READ")).toBe(false)
      expect(Number(yield* repo.policyVersion)).toBe(before + 3)
    }).pipe(Effect.provide(Services)))

  it.effect("bootstrapAdmin creates the admin once, and the admin role allows everything", () =>
    Effect.gen(function*() {
      const policy = yield* IamPolicy
      const input = { username: "boss", email: "boss@example.com", password: Redacted.make("boss password") }
      const first = yield* bootstrapAdmin(input)
      const again = yield* bootstrapAdmin(input)
      expect(first.created).toBe(true)
      expect(again).toEqual({ userId: first.userId, created: false })
      expect(yield* policy.enforce(first.userId, "PERMISSION", "DELETE")).toBe(true)
      expect(yield* Effect.flatMap(Accounts, (a) => a.roleNames(first.userId))).toEqual([config.iam.adminRole])
    }).pipe(Effect.provide(Services)))

  it.effect("delegation: a user moves only the roles and permissions they hold; nobody removes the last admin", () =>
    Effect.gen(function*() {
      const roles = yield* Roles
      const { userId: boss } = yield* bootstrapAdmin({ username: "boss", email: "boss@example.com", password: Redacted.make("boss password") })
      const adminRole = (yield* roles.listRoles).find((r) => r.name === config.iam.adminRole)!.id
      const ann = (yield* register("ann")).id
      const manager = yield* roles.createRole("manager", null)
      const updateRoles = yield* roles.createPermission({ name: "update roles", description: null, resource: "ROLE", action: "UPDATE" })
      const deleteUsers = yield* roles.createPermission({ name: "delete users", description: null, resource: "USER", action: "DELETE" })
      yield* roles.grant(OPERATOR, manager.id, updateRoles.id)
      yield* roles.assign(OPERATOR, ann, manager.id)

      const denied = (what: string, deed: string) => ({ code: "permission_denied", message: `permission denied: you do not hold ${what}, so you cannot ${deed}` })
      expect(yield* failure(roles.assign(ann, ann, adminRole))).toEqual(denied(`role ${adminRole}`, "assign it"))
      expect(yield* failure(roles.unassign(ann, boss, adminRole))).toEqual(denied(`role ${adminRole}`, "remove it"))
      expect(yield* failure(roles.deleteRole(ann, adminRole))).toEqual(denied(`role ${adminRole}`, "delete it"))
      expect(yield* failure(roles.grant(ann, manager.id, deleteUsers.id))).toEqual(denied(`permission ${deleteUsers.id}`, "grant it"))
      expect(yield* failure(roles.grant(ann, manager.id, deleteUsers.id + 100))).toEqual(denied(`permission ${deleteUsers.id + 100}`, "grant it"))
      // What ann holds she may pass on.
      const bob = (yield* register("bob")).id
      yield* roles.assign(ann, bob, manager.id)
      yield* roles.grant(ann, manager.id, updateRoles.id)

      const lastAdmin = { code: "failed_precondition", message: LAST_ADMIN }
      expect(yield* failure(roles.unassign(boss, boss, adminRole))).toEqual(lastAdmin)
      expect(yield* failure(roles.deleteRole(boss, adminRole))).toEqual(lastAdmin)
      yield* roles.assign(boss, ann, adminRole)
      yield* roles.unassign(boss, boss, adminRole)
      expect(yield* failure(roles.unassign(ann, ann, adminRole))).toEqual(lastAdmin)
      expect((yield* roles.rolesOf(ann)).map((r) => r.id)).toContain(adminRole)
    }).pipe(Effect.provide(Services)))

  it.effect("the engine is a port: IamPolicy answers from whatever Policy it is given", () =>
    Effect.gen(function*() {
      const policy = yield* IamPolicy
      expect(yield* policy.enforce(7, "ORDER", "READ")).toBe(true)
      expect(yield* policy.enforce(7, "ORDER", "DELETE")).toBe(false)
      expect(yield* policy.enforce(8, "ORDER", "READ")).toBe(false)
    }).pipe(Effect.provide(IamPolicy.layer.pipe(
      Layer.provide(PolicyTest([["p", "clerk", "ORDER", "READ"], ["g", "user:7", "clerk"]])),
      Layer.provide(IamPolicyRules.Default),
      Layer.provideMerge(Repos),
      Layer.provide(Ports)
    ))))
})

describe("IAM OAuth2 sign-in over the Test port and repos", () => {
  const oauthConfig = testConfig(iamTestEnv({ AUTH_IAM_OAUTH_REDIRECT_URI: "https://app.example.com/iam/callback" }))
  const identities = {
    "code-ann": { subject: "ann-sub", email: " Ann@Example.com", emailVerified: true },
    "code-ann-unverified": { subject: "ann-sub", email: "ann@example.com", emailVerified: false },
    "code-ann-no-email": { subject: "ann-sub", email: null, emailVerified: true },
    "code-ann-other-email": { subject: "ann-sub", email: "ann@elsewhere.example", emailVerified: true },
    "code-ann-second": { subject: "ann-second-sub", email: "ann@example.com", emailVerified: true },
    "code-nobody": { subject: "nobody-sub", email: "nobody@example.com", emailVerified: true },
    "code-no-subject": { subject: "", email: "ann@example.com", emailVerified: true }
  }
  const signInOver = (config: typeof oauthConfig) =>
    OAuthSignIn.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(OAuthFlowsRepo.Test, OAuthIdentities.Test("idp", identities), SecureRandom.Live)),
      Layer.provideMerge(Accounts.layer.pipe(
        Layer.provideMerge(LoginThrottle.layer),
        Layer.provideMerge(LoginThrottleRepo.Test),
        Layer.provideMerge(Repos),
        Layer.provideMerge(Layer.mergeAll(Transactions.Test, IamSql.Test, PasswordHasherTest, configLayer(config)))
      ))
    )
  const start = Effect.flatMap(OAuthSignIn, (oauth) => oauth.start("idp", null))
  const startLink = (userId: number) => Effect.flatMap(OAuthSignIn, (oauth) => oauth.start("idp", userId))
  const finishAs = (code: string, state: string, finisher: number | null) =>
    Effect.flatMap(OAuthSignIn, (oauth) => oauth.finish(code, state, Effect.succeed(finisher)))
  const finish = (code: string, state: string) =>
    Effect.flatMap(OAuthSignIn, (oauth) => oauth.finish(code, state, Effect.die("a sign-in flow never asks who finishes it")))
  const unauthenticated = (message: string) => ({ code: "unauthenticated", message })
  const linked = (userId: number, code: string) => Effect.flatMap(startLink(userId), (started) => finishAs(code, started.state, userId))

  it.effect("a link by the signed-in holder, when the provider verified the account's email; then the sign-in, once per state", () =>
    Effect.gen(function*() {
      const ann = yield* register("ann")
      // Not linked yet: the verified email is ann's, but an email alone signs nobody in.
      expect(yield* failure(Effect.flatMap(start, (started) => finish("code-ann", started.state)))).toEqual(unauthenticated(NOT_LINKED))
      expect((yield* linked(ann.id, "code-ann")).id).toBe(ann.id)
      const started = yield* start
      expect(new URL(started.authorizationUrl).searchParams.get("state")).toBe(started.state)
      expect((yield* finish("code-ann", started.state)).id).toBe(ann.id)
      expect(yield* failure(finish("code-ann", started.state))).toEqual(unauthenticated("state is not valid"))
      // Linked by subject: the email the provider sends later does not matter to a sign-in, verified or not.
      expect((yield* Effect.flatMap(start, (s) => finish("code-ann-other-email", s.state))).id).toBe(ann.id)
      expect((yield* Effect.flatMap(start, (s) => finish("code-ann-unverified", s.state))).id).toBe(ann.id)
      // A link again is idempotent; a second identity with the same verified email links too.
      expect((yield* linked(ann.id, "code-ann")).id).toBe(ann.id)
      expect((yield* linked(ann.id, "code-ann-second")).id).toBe(ann.id)
    }).pipe(Effect.provide(signInOver(oauthConfig))))

  it.effect("a squatter who registered someone's email first never gets that person's sign-in, nor can link it", () =>
    Effect.gen(function*() {
      const squatter = yield* register("squatter", "ann@example.com")
      expect(yield* failure(Effect.flatMap(start, (started) => finish("code-ann", started.state)))).toEqual(unauthenticated(NOT_LINKED))
      // The squatter's own link needs the provider to vouch for the email: the identity is Ann's, at the provider.
      const other = yield* register("bob")
      expect(yield* failure(linked(other.id, "code-ann"))).toEqual(unauthenticated("the provider's verified email is not this account's"))
      // A link flow the squatter started, sent to Ann, who logs in at the provider: finished by anyone but the
      // squatter (Ann's own credentials, or none), it links nothing.
      for (const finisher of [null, other.id]) {
        const started = yield* startLink(squatter.id)
        expect(yield* failure(finishAs("code-ann", started.state, finisher))).toEqual(unauthenticated(NOT_THE_LINKER))
      }
      expect(yield* failure(Effect.flatMap(start, (started) => finish("code-ann", started.state)))).toEqual(unauthenticated(NOT_LINKED))
      expect(squatter.email).toBe("ann@example.com")
    }).pipe(Effect.provide(signInOver(oauthConfig))))

  it.effect("a link refuses an unverified, missing or other email, no subject, a refused code, an expired state and an unknown provider", () =>
    Effect.gen(function*() {
      const ann = yield* register("ann")
      const linkFresh = (code: string) => failure(linked(ann.id, code))
      expect(yield* linkFresh("code-ann-unverified")).toEqual(unauthenticated("the provider has not verified this email"))
      expect(yield* linkFresh("code-ann-no-email")).toEqual(unauthenticated("the provider gave no email"))
      expect(yield* linkFresh("code-nobody")).toEqual(unauthenticated("the provider's verified email is not this account's"))
      expect(yield* linkFresh("code-no-subject")).toEqual(unauthenticated("the provider gave no subject"))
      expect(yield* linkFresh("code-forged")).toEqual(unauthenticated("the provider did not confirm the sign-in"))
      // None of those linked anything.
      expect(yield* failure(Effect.flatMap(start, (started) => finish("code-ann", started.state)))).toEqual(unauthenticated(NOT_LINKED))
      const started = yield* startLink(ann.id)
      yield* TestClock.adjust(Duration.sum(Duration.minutes(10), Duration.millis(1)))
      expect(yield* failure(finishAs("code-ann", started.state, ann.id))).toEqual(unauthenticated("sign-in has expired: start again"))
      expect(yield* failure(Effect.flatMap(OAuthSignIn, (oauth) => oauth.start("other", null)))).toEqual({
        code: "invalid_argument",
        message: "unsupported provider: other"
      })
    }).pipe(Effect.provide(signInOver(oauthConfig))))

  it.effect("off without AUTH_IAM_OAUTH_REDIRECT_URI: FAILED_PRECONDITION", () =>
    Effect.gen(function*() {
      const off = { code: "failed_precondition", message: "OAuth2 sign-in is off: set AUTH_IAM_OAUTH_REDIRECT_URI" }
      expect(yield* failure(start)).toEqual(off)
      expect(yield* failure(finish("code-ann", "state"))).toEqual(off)
    }).pipe(Effect.provide(signInOver(config))))
})
