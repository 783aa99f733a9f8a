import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Session } from "../contract/Session.js"
import { AuthError } from "../domain/AuthError.js"
import { isFlowStateExpired, verifierMatches } from "../domain/Pkce.js"
import { isBanned } from "../domain/UserRow.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import type { AuthMethod } from "../sessions/Sessions.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface PkceGrantRequest {
  readonly auth_code?: string | null | undefined
  readonly code_verifier?: string | null | undefined
}

/** The flows' authentication methods that are amr methods too; anything else is signed in as a one-time code. */
const FLOW_METHODS: ReadonlyArray<AuthMethod> = ["email/signup", "recovery", "magiclink", "email_change", "otp", "oauth", "sso/saml"]
const amrOf = (method: string): AuthMethod => FLOW_METHODS.find((known) => known === method) ?? "otp"

const notFound = () => AuthError.of(404, "flow_state_not_found", "invalid flow state, no valid flow state found")

/** POST /token?grant_type=pkce (reference §2.5): an auth code and its verifier for a session, once. */
export class PkceGrant extends Effect.Service<PkceGrant>()("auth/PkceGrant", {
  effect: Effect.gen(function*() {
    const flows = yield* FlowStateRepo
    const users = yield* UsersRepo
    const tokens = yield* AccessTokens

    const exchange = traced("PkceGrant.exchange")(function*(request: PkceGrantRequest): Effect.fn.Return<Session, AuthError> {
      const authCode = request.auth_code ?? ""
      const verifier = request.code_verifier ?? ""
      if (authCode === "" || verifier === "") {
        return yield* AuthError.validation("invalid request: both auth code and code verifier should be non-empty")
      }
      const at = new Date(yield* Clock.currentTimeMillis)
      const found = yield* flows.findByAuthCode(authCode)
      if (Option.isNone(found) || found.value.user_id === null) return yield* notFound()
      const flow = found.value
      if (isFlowStateExpired(flow.created_at, at)) {
        return yield* AuthError.of(422, "flow_state_expired", "invalid flow state, flow state has expired")
      }
      if (!verifierMatches(verifier, { challenge: flow.code_challenge, method: flow.code_challenge_method })) {
        return yield* AuthError.of(400, "bad_code_verifier", "code challenge does not match previously saved code verifier")
      }
      // Deleted before the session starts, and only one of two concurrent exchanges deletes it: the code is single use.
      if (!(yield* flows.take(flow.id))) return yield* notFound()
      const user = yield* users.findById(flow.user_id!)
      if (Option.isNone(user)) return yield* notFound()
      if (isBanned(user.value, at)) return yield* AuthError.of(400, "user_banned", "User is banned")
      // GoTrue names a flow's provider in its login entry, and hands an OAuth flow's provider tokens over with the session.
      const session = yield* tokens.issue(user.value, amrOf(flow.authentication_method), at, {
        action: "login",
        traits: { provider: flow.provider_type }
      })
      if (flow.provider_access_token === null) return session
      return new Session({
        ...session,
        provider_token: flow.provider_access_token,
        ...(flow.provider_refresh_token === null ? {} : { provider_refresh_token: flow.provider_refresh_token })
      })
    })

    return { exchange } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, AccessTokens.Default]
}) {}
