import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { AccountReclaim } from "../../../src/auth/users/AccountReclaim.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { AuditLogRepo } from "../../../src/auth/users/AuditLogRepo.js"
import { type ExternalProfile, ExternalAccounts } from "../../../src/auth/users/ExternalAccounts.js"
import { IdentitiesRepo } from "../../../src/auth/users/IdentitiesRepo.js"
import { PendingTokens } from "../../../src/auth/users/PendingTokens.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"
import { MemoryRepos } from "../support/MemoryRepos.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

/** ExternalAccounts over the in-memory repos: the linking rules as the service applies them, no database. */
const Over = (env: Record<string, string> = {}) =>
  ExternalAccounts.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(AuditLog.DefaultWithoutDependencies),
    Layer.provideMerge(CurrentClient.Default),
    Layer.provideMerge(AccountReclaim.DefaultWithoutDependencies),
    Layer.provideMerge(PendingTokens.DefaultWithoutDependencies),
    Layer.provideMerge(MemoryRepos()),
    Layer.provide(SecureRandom.Test),
    Layer.provide(Transactions.Test),
    Layer.provide(configLayer(testConfig(env)))
  )

/** The Live service on the real database, where the transaction (and the commit of a refused sign-in) is real. */
const Live = () =>
  Layer.mergeAll(ExternalAccounts.Default, UsersRepo.Default, IdentitiesRepo.Default, AuditLogRepo.Default).pipe(
    Layer.provideMerge(configLayer(testConfig())),
    Layer.provideMerge(SecureRandom.Live),
    Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
    Layer.provideMerge(TestDatabase),
    Layer.orDie
  )

// Before the TestClock's start (the epoch), when the sign-ins happen.
const T0 = new Date(-86_400_000)

const passwordUser = (email: string, confirmed: boolean) =>
  Effect.gen(function*() {
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const id = randomUUID()
    const user = yield* users.insert({
      id,
      aud: "authenticated",
      role: "authenticated",
      email,
      phone: null,
      encrypted_password: "$2a$10$hash",
      email_confirmed_at: confirmed ? T0 : null,
      phone_confirmed_at: null,
      raw_app_meta_data: { provider: "email", providers: ["email"] },
      raw_user_meta_data: { sub: id, email, email_verified: confirmed, theme: "dark" },
      is_anonymous: false,
      now: T0
    })
    yield* identities.insert({ id: randomUUID(), provider_id: id, user_id: id, identity_data: { sub: id, email }, provider: "email", now: T0 })
    return user
  }).pipe(Effect.orDie)

const profile = (fields: Partial<ExternalProfile> = {}): ExternalProfile => ({
  providerId: `sub-${randomUUID()}`,
  email: `ext-${randomUUID().slice(0, 8)}@example.com`,
  emailVerified: true,
  name: "Ada Lovelace",
  avatarUrl: "https://img.example/ada.png",
  claims: { iss: "https://accounts.google.com" },
  ...fields
})

const codeOf = <A>(result: Either.Either<A, { code: string }>) => Either.isLeft(result) ? result.left.code : "ok"

const rules = (name: string, accounts: Layer.Layer<ExternalAccounts | UsersRepo | IdentitiesRepo | AuditLogRepo>) =>
layer(accounts, { timeout: 60_000 })(name, (it) => {
  it.effect("a new verified profile makes a confirmed user with its identity and GoTrue's metadata", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const p = profile()
      const { identity, outcome, user } = yield* accounts.signIn("google", p)
      expect(outcome).toBe("created")
      expect(user.email).toBe(p.email)
      expect(user.email_confirmed_at).not.toBeNull()
      expect(user.encrypted_password).toBe("")
      expect(user.raw_app_meta_data).toEqual({ provider: "google", providers: ["google"] })
      expect(user.raw_user_meta_data).toEqual({
        iss: "https://accounts.google.com",
        sub: p.providerId,
        provider_id: p.providerId,
        email: p.email,
        name: "Ada Lovelace",
        full_name: "Ada Lovelace",
        avatar_url: "https://img.example/ada.png",
        picture: "https://img.example/ada.png",
        email_verified: true,
        phone_verified: false
      })
      expect([identity.provider, identity.provider_id, identity.user_id, identity.email]).toEqual(["google", p.providerId, user.id, p.email])
      const { entries } = yield* (yield* AuditLogRepo).page(1, 10, { field: "author", value: p.email! })
      expect(entries.map((e) => [e.payload.action, e.payload.traits])).toEqual([["user_signedup", { provider: "google" }]])
    }))

  it.effect("the same identity again is the same user, with the identity's claims and the user's metadata refreshed", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const p = profile()
      const first = yield* accounts.signIn("google", p)
      const again = yield* accounts.signIn("google", { ...p, name: "Countess", email: "changed@example.com" })
      expect(again.outcome).toBe("existing")
      expect(again.user.id).toBe(first.user.id)
      expect(again.identity.id).toBe(first.identity.id)
      expect(again.identity.identity_data["name"]).toBe("Countess")
      expect(again.user.raw_user_meta_data?.["full_name"]).toBe("Countess")
      // The user's own email is its own: a provider's new address does not replace it.
      expect(again.user.email).toBe(p.email)
      expect((yield* (yield* IdentitiesRepo).forUser(first.user.id)).length).toBe(1)
    }))

  it.effect("a verified email links to the confirmed password user holding it, who keeps the password", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const existing = yield* passwordUser(`link-${randomUUID().slice(0, 8)}@example.com`, true)
      const { outcome, user } = yield* accounts.signIn("google", profile({ email: existing.email!.toUpperCase() }))
      expect(outcome).toBe("linked")
      expect(user.id).toBe(existing.id)
      expect(user.encrypted_password).toBe("$2a$10$hash")
      expect(user.raw_app_meta_data).toEqual({ provider: "email", providers: ["email", "google"] })
      expect(user.raw_user_meta_data?.["theme"]).toBe("dark")
      expect((yield* (yield* IdentitiesRepo).forUser(existing.id)).map((i) => i.provider)).toEqual(["email", "google"])
    }))

  it.effect("an unverified email is not linked: a new user without the taken address, who must verify first", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const identities = yield* IdentitiesRepo
      const existing = yield* passwordUser(`nolink-${randomUUID().slice(0, 8)}@example.com`, true)
      const p = profile({ email: existing.email!, emailVerified: false })
      const result = yield* Effect.either(accounts.signIn("google", p))
      expect(codeOf(result)).toBe("provider_email_needs_verification")
      expect((yield* identities.forUser(existing.id)).map((i) => i.provider)).toEqual(["email"])
      // Committed all the same, as GoTrue does: the identity exists, on a user of its own with no email.
      const made = yield* identities.findByProvider("google", p.providerId)
      expect(Option.isSome(made)).toBe(true)
      const other = yield* (yield* UsersRepo).findById(Option.getOrThrow(made).user_id)
      expect(Option.map(other, (u) => [u.id !== existing.id, u.email, u.email_confirmed_at])).toEqual(Option.some([true, null, null]))
    }))

  it.effect("a verified email reclaims an unconfirmed account: its password and other identities go, and it is confirmed", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const existing = yield* passwordUser(`reclaim-${randomUUID().slice(0, 8)}@example.com`, false)
      const { outcome, user } = yield* accounts.signIn("google", profile({ email: existing.email! }))
      expect(outcome).toBe("linked")
      expect(user.id).toBe(existing.id)
      expect(user.encrypted_password).toBe("")
      expect(user.email_confirmed_at).not.toBeNull()
      expect(user.raw_user_meta_data?.["theme"]).toBeUndefined()
      expect(user.raw_user_meta_data?.["email_verified"]).toBe(true)
      expect(user.raw_app_meta_data).toEqual({ provider: "google", providers: ["google"] })
      expect((yield* (yield* IdentitiesRepo).forUser(existing.id)).map((i) => i.provider)).toEqual(["google"])
    }))

  it.effect("a new profile with an unverified, free email is kept unconfirmed and refused until verified", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const p = profile({ emailVerified: false })
      expect(codeOf(yield* Effect.either(accounts.signIn("keycloak", p)))).toBe("provider_email_needs_verification")
      const again = yield* accounts.signIn("keycloak", { ...p, emailVerified: true })
      expect(again.outcome).toBe("existing")
      expect(again.user.email).toBe(p.email)
      expect(again.user.email_confirmed_at).not.toBeNull()
    }))

  it.effect("a banned user is refused, by identity and by email", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const users = yield* UsersRepo
      const p = profile()
      const first = yield* accounts.signIn("google", p)
      yield* users.update(first.user.id, { banned_until: new Date(Date.UTC(2999, 0, 1)) }, T0).pipe(Effect.orDie)
      expect(codeOf(yield* Effect.either(accounts.signIn("google", p)))).toBe("user_banned")
      expect(codeOf(yield* Effect.either(accounts.signIn("apple", profile({ email: first.user.email! }))))).toBe("user_banned")
    }))
})

rules("ExternalAccounts over the in-memory repos", Over())
rules("ExternalAccounts Live on the database", Live())

layer(Over({ AUTH_DISABLE_SIGNUP: "true" }))("ExternalAccounts with sign-ups disabled", (it) => {
  it.effect("a new user is refused with signup_disabled, but a verified email still links", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      expect(codeOf(yield* Effect.either(accounts.signIn("google", profile())))).toBe("signup_disabled")
      const existing = yield* passwordUser(`off-${randomUUID().slice(0, 8)}@example.com`, true)
      expect((yield* accounts.signIn("google", profile({ email: existing.email! }))).outcome).toBe("linked")
    }))
})

layer(Live(), { timeout: 60_000 })("ExternalAccounts Live, concurrent first sign-ins", (it) => {
  it.effect("the same new identity signing in from several requests at once is one user, never an error", () =>
    Effect.gen(function*() {
      const accounts = yield* ExternalAccounts
      const first = profile()
      const results = yield* Effect.all(Array.from({ length: 6 }, () => accounts.signIn("google", first)), { concurrency: "unbounded" })
      expect(new Set(results.map((result) => result.user.id)).size).toBe(1)
      expect(results.filter((result) => result.outcome === "created")).toHaveLength(1)
    }))
})
