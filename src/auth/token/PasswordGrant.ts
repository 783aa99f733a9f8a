import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { Session } from "../contract/Session.js"
import { AuthError } from "../domain/AuthError.js"
import { checkPassword } from "../domain/PasswordPolicy.js"
import { formatPhoneNumber } from "../domain/Phone.js"
import { isBanned } from "../domain/UserRow.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface PasswordGrantRequest {
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly password?: string | null | undefined
}

const invalidCredentials = AuthError.of(400, "invalid_credentials", "Invalid login credentials")

/** POST /token?grant_type=password (reference §2.3). */
export class PasswordGrant extends Effect.Service<PasswordGrant>()("auth/PasswordGrant", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const tokens = yield* AccessTokens
    const hasher = yield* PasswordHasher
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const signIn = traced("PasswordGrant.signIn")(function*(
      request: PasswordGrantRequest
    ): Effect.fn.Return<Session, AuthError> {
      const email = request.email ?? ""
      const phone = request.phone ?? ""
      if (email !== "" && phone !== "") {
        return yield* AuthError.validation("Only an email address or phone number should be provided on login.")
      }
      if (email === "" && phone === "") return yield* AuthError.validation("missing email or phone")
      if (email !== "" && !config.externalEmailEnabled) {
        return yield* AuthError.of(422, "email_provider_disabled", "Email logins are disabled")
      }
      if (phone !== "" && !config.externalPhoneEnabled) {
        return yield* AuthError.of(422, "phone_provider_disabled", "Phone logins are disabled")
      }
      const found = email !== ""
        ? yield* users.findByEmail(config.jwt.aud, email.trim())
        : yield* users.findByPhone(config.jwt.aud, formatPhoneNumber(phone))
      const password = Redacted.make(request.password ?? "")
      const stored = Option.flatMap(found, (u) => Option.fromNullable(u.encrypted_password)).pipe(
        Option.filter((hash) => hash !== "")
      )
      // An unknown user costs the same bcrypt work as a wrong password, so timing does not reveal accounts.
      const valid = yield* hasher.verifyOrBurn(password, Option.getOrUndefined(stored))
      if (!valid || Option.isNone(found)) return yield* invalidCredentials
      const user = found.value
      const at = yield* now
      // Checked after the password, unlike GoTrue, so a ban does not confirm that an account exists.
      if (isBanned(user, at)) return yield* AuthError.of(400, "user_banned", "User is banned")
      if (email !== "" && user.email_confirmed_at === null) {
        return yield* AuthError.of(400, "email_not_confirmed", "Email not confirmed")
      }
      if (phone !== "" && user.phone_confirmed_at === null) {
        return yield* AuthError.of(400, "phone_not_confirmed", "Phone not confirmed")
      }
      // A hash made at another cost (GoTrue's at a cost above its default or at the minimum, another system's at any)
      // is stored again at ours, as GoTrue's Authenticate does after a sign-in.
      if (Option.isSome(stored) && hasher.needsRehash(stored.value)) {
        yield* users.replacePasswordHash(user.id, stored.value, yield* hasher.hash(password))
      }
      const session = yield* tokens.issue(user, "password", at, { action: "login", traits: { provider: email !== "" ? "email" : "phone" } })
      const check = checkPassword(Redacted.value(password), config.password)
      return check._tag === "Weak"
        ? new Session({ ...session, weak_password: { message: check.message, reasons: check.reasons } })
        : session
    })

    return { signIn } as const
  }),
  dependencies: [UsersRepo.Default, AccessTokens.Default]
}) {}
