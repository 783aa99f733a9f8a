import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { Session } from "../../../src/auth/contract/Session.js"
import { User } from "../../../src/auth/contract/User.js"
import { AuthMessages } from "../../../src/auth/messages/AuthMessages.js"
import { MailTemplates } from "../../../src/auth/messages/MailTemplates.js"
import { AccessTokens } from "../../../src/auth/sessions/AccessTokens.js"
import { Sessions } from "../../../src/auth/sessions/Sessions.js"
import { Signup } from "../../../src/auth/signup/Signup.js"
import { PendingTokens } from "../../../src/auth/users/PendingTokens.js"
import { Users } from "../../../src/auth/users/Users.js"
import { AuditLog } from "../../../src/auth/users/AuditLog.js"
import { UsersRepo } from "../../../src/auth/users/UsersRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { EvenTiming } from "../../../src/platform/http/EvenTiming.js"
import { MemoryMailer, SentMail } from "../../../src/platform/mail/Mailer.js"
import { PasswordHasherTest } from "../../../src/platform/PasswordHasher.js"
import { tokenSignerFor } from "../../../src/platform/PortsLive.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { MemorySmsSender } from "../../../src/platform/sms/SmsSender.js"
import { Transactions } from "../../../src/platform/sql/Transactions.js"
import { testConfig } from "../../support/TestServer.js"
import { MemoryRepos } from "../support/MemoryRepos.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

/*
 * Sign-up's duplicate rules through the Signup service over the in-memory repos and test ports: no database, no
 * HTTP. SignupRules.test.ts covers the same ground end to end.
 */

const SignupOverMemory = (env: Record<string, string>, users: Layer.Layer<UsersRepo> = UsersRepo.Test) => {
  const config = testConfig(env)
  return Signup.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(AccessTokens.DefaultWithoutDependencies),
    Layer.provideMerge(Sessions.DefaultWithoutDependencies),
    Layer.provideMerge(Users.DefaultWithoutDependencies),
    Layer.provideMerge(AuthMessages.DefaultWithoutDependencies.pipe(Layer.provide(MailTemplates.Default))),
    Layer.provideMerge(PendingTokens.DefaultWithoutDependencies),
    Layer.provideMerge(EvenTiming.Default),
    Layer.provideMerge(AuditLog.DefaultWithoutDependencies),
    Layer.provideMerge(CurrentClient.Default),
    Layer.provideMerge(MemoryRepos(users)),
    Layer.provideMerge(Layer.mergeAll(
      Layer.orDie(tokenSignerFor(config)),
      PasswordHasherTest,
      MemoryMailer,
      MemorySmsSender,
      SecureRandom.Test,
      Transactions.Test,
      configLayer(config)
    ))
  )
}

/** A users table that never finds anyone: every sign-up looks new, as to two requests racing for one address. */
const BlindUsers = Layer.effect(
  UsersRepo,
  Effect.map(UsersRepo, (repo) => UsersRepo.make({ ...repo, findByEmail: () => Effect.succeed(Option.none()) }))
).pipe(Layer.provide(UsersRepo.Test))

const password = "correct-horse-battery"

layer(SignupOverMemory({ AUTH_MAILER_AUTOCONFIRM: "true" }))("sign-up duplicates, autoconfirm on", (it) => {
  it.effect("a new address gets a session; the same address again, in any case, is user_already_exists (422)", () =>
    Effect.gen(function*() {
      const signup = yield* Signup
      const first = yield* signup.signup({ email: "dup@example.com", password })
      expect(first).toBeInstanceOf(Session)
      const again = yield* Effect.either(signup.signup({ email: "DUP@example.com", password }))
      expect(Either.isLeft(again) && [again.left.status, again.left.code]).toEqual([422, "user_already_exists"])
    }))
})

layer(SignupOverMemory({ AUTH_MAILER_AUTOCONFIRM: "true" }, BlindUsers))("sign-up duplicates, lost race", (it) => {
  it.effect("an insert that meets the unique key answers as for any duplicate", () =>
    Effect.gen(function*() {
      const signup = yield* Signup
      yield* signup.signup({ email: "race@example.com", password })
      const again = yield* Effect.either(signup.signup({ email: "race@example.com", password }))
      expect(Either.isLeft(again) && again.left.code).toBe("user_already_exists")
    }))
})

layer(SignupOverMemory({ AUTH_MAILER_AUTOCONFIRM: "false" }))("sign-up duplicates, autoconfirm off", (it) => {
  it.effect("a confirmed address gets a plausible unconfirmed user that is not the real one, and no mail", () =>
    Effect.gen(function*() {
      const signup = yield* Signup
      const users = yield* UsersRepo
      const { mails } = yield* SentMail
      const created = yield* signup.signup({ email: "held@example.com", password, data: { plan: "pro" } })
      // The confirmation goes out after the answer.
      yield* (yield* AuthMessages).settled
      expect(created).toBeInstanceOf(User)
      const real = created as User
      yield* users.update(real.id, { email_confirmed_at: new Date() }, new Date())
      const sentBefore = (yield* mails.get).length
      const faux = yield* signup.signup({ email: "held@example.com", password, data: { plan: "pro" } })
      expect(faux).toBeInstanceOf(User)
      const fake = faux as User
      expect(fake.id).not.toBe(real.id)
      expect(fake.email).toBe("held@example.com")
      expect(fake.email_confirmed_at).toBeUndefined()
      expect(fake.user_metadata).toEqual({ plan: "pro", sub: fake.id, email: "held@example.com", email_verified: false, phone_verified: false })
      expect((yield* mails.get).length).toBe(sentBefore)
    }))

  it.effect("an unconfirmed address is sent its confirmation again, once the window allows, and keeps its password", () =>
    Effect.gen(function*() {
      const signup = yield* Signup
      const users = yield* UsersRepo
      const first = (yield* signup.signup({ email: "pending@example.com", password })) as User
      const stored = Option.getOrThrow(yield* users.findById(first.id)).encrypted_password
      const tooSoon = yield* Effect.either(signup.signup({ email: "pending@example.com", password: "another-password-entirely" }))
      expect(Either.isLeft(tooSoon) && tooSoon.left.code).toBe("over_email_send_rate_limit")
      expect(Option.getOrThrow(yield* users.findById(first.id)).encrypted_password).toBe(stored)
    }))
})
