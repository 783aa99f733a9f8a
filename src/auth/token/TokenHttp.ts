import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AuthError } from "../domain/AuthError.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { Sessions } from "../sessions/Sessions.js"
import { PasswordGrant } from "./PasswordGrant.js"
import { IdTokenGrant } from "./IdTokenGrant.js"
import { PkceGrant } from "./PkceGrant.js"
import { Web3Grant } from "./Web3Grant.js"
import { TokenApi } from "./TokenApi.js"

export const TokenHttpLive = HttpApiBuilder.group(TokenApi, "token", (handlers) =>
  Effect.gen(function*() {
    const password = yield* PasswordGrant
    const pkce = yield* PkceGrant
    const idToken = yield* IdTokenGrant
    const web3 = yield* Web3Grant
    const sessions = yield* Sessions
    const tokens = yield* AccessTokens
    const limits = yield* RateLimits
    // GoTrue limits every grant it serves inside its handler; a grant it does not know is refused before counting.
    const limited = <A, E, R>(grant: Effect.Effect<A, E, R>) => Effect.zipRight(limits.check("token"), grant)
    return handlers.handle("token", ({ payload, urlParams }) => {
      // Counted once answered: a refused grant is no sign-in.
      const counted = <A, E, R>(granted: Effect.Effect<A, E, R>) =>
        Effect.tap(granted, () => countTagged(AuthMetrics.signIns, "grant_type", urlParams.grant_type ?? ""))
      switch (urlParams.grant_type) {
        case "password":
          return counted(limited(withSessionHeaders(password.signIn(payload))))
        case "refresh_token":
          // The refresh rules are the sessions floor's (an OAuth client's session is refused here: it is refreshed at
          // /oauth/token); this grant only answers with the session it returns.
          return counted(limited(withSessionHeaders(Clock.currentTimeMillis.pipe(
            Effect.flatMap((ms) => sessions.refresh(payload.refresh_token ?? "", new Date(ms))),
            Effect.flatMap(tokens.respond)
          ))))
        case "pkce":
          return counted(limited(withSessionHeaders(pkce.exchange(payload))))
        case "id_token":
          return counted(limited(withSessionHeaders(idToken.signIn(payload))))
        case "web3":
          // GoTrue counts this grant against its own Web3 limiter instead of the token one.
          return counted(Effect.zipRight(limits.check("web3"), withSessionHeaders(web3.signIn(payload))))
        default:
          // GoTrue's answer, code and all, for any grant it does not handle.
          return Effect.fail(AuthError.of(400, "invalid_credentials", "unsupported_grant_type"))
      }
    })
  }))
