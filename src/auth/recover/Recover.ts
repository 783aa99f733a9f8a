import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { EvenTiming } from "../../platform/http/EvenTiming.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { requestedPkce } from "../domain/Pkce.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { Confirmations } from "../messages/Confirmations.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface RecoverRequest {
  readonly email?: string | null | undefined
  readonly redirectTo?: string | undefined
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
}

/** POST /recover (reference §2.10): a recovery code and link for a known address, and the same `{}` for any. */
export class Recover extends Effect.Service<Recover>()("auth/Recover", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const confirmations = yield* Confirmations
    const timing = yield* EvenTiming
    const allowList = compileAllowList(config.uriAllowList)

    const recover = traced("Recover.recover")(function*(request: RecoverRequest): Effect.fn.Return<void, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const raw = request.email ?? ""
      if (raw === "") return yield* AuthError.validation("Password recovery requires an email")
      if (!config.externalEmailEnabled) return yield* AuthError.of(400, "email_provider_disabled", "Email logins are disabled")
      const pkce = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
      const email = yield* Either.mapLeft(parseEmail(raw), (problem) => AuthError.validation(emailProblemMessage[problem]))
      const timed = yield* timing.start("recover")
      const user = yield* users.findByEmail(config.jwt.aud, email)
      // An unknown address gets the same answer at the same time (the mail goes after it), so the endpoint cannot
      // tell which addresses have accounts.
      if (Option.isNone(user)) return yield* timing.done(timed, "unknown")
      yield* confirmations.sendLink(user.value, "recovery", chooseRedirect(request.redirectTo, config.siteUrl, allowList), at, pkce)
      yield* timing.done(timed, "known")
    })

    return { recover } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, Users.Default, AuthMessages.Default, PendingTokens.Default, AuditLog.Default, EvenTiming.Default, Transactions.Live]
}) {}
