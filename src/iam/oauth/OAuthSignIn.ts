import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IamConfig } from "../../config/IamConfig.js"
import { sweepEvery } from "../../platform/process/SweepEvery.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { type Account, Accounts } from "../accounts/Accounts.js"
import { IamError } from "../domain/IamError.js"
import { finishVerdict, FLOW_SECRET_BYTES, flowSecretOf, flowState, stateDigest } from "../domain/OAuthFlowRules.js"
import { OAuthFlowsRepo } from "../store/OAuthFlowsRepo.js"
import { OAuthIdentities } from "./OAuthIdentities.js"
import { traced } from "../../platform/Traced.js"

/** A started sign-in: where the app sends the browser, and the state the provider will send back with the code. */
export interface StartedSignIn {
  readonly authorizationUrl: string
  readonly state: string
  readonly expiresAt: Date
}

/** How often an instance deletes expired flows; none of them can be finished, so this is only housekeeping. */
const SWEEP_EVERY = Duration.minutes(1)

const OFF = "OAuth2 sign-in is off: set AUTH_IAM_OAUTH_REDIRECT_URI"
const TAKEN = "this provider identity is linked to another account"

/**
 * OAuth2 sign-in of existing IAM accounts through the auth server's providers (docs/iam.md, "OAuth2 sign-in"). Start
 * keeps a flow (its state's digest, the PKCE verifier, the provider, and for a link the account) for
 * AUTH_IAM_OAUTH_FLOW_TTL; finish takes it (single use, whatever comes of it) and exchanges the code. A link flow,
 * started by an account's holder signed in, links the provider identity to that account when the provider verified
 * the account's email; a sign-in flow signs in the account that linked the identity (finishVerdict). No account is
 * ever created, and an email alone signs nobody in.
 */
export class OAuthSignIn extends Context.Tag("iam/OAuthSignIn")<OAuthSignIn, {
  /**
   * A sign-in, or with `linkUserId` (the signed-in caller) a link of that account. FAILED_PRECONDITION when off;
   * INVALID_ARGUMENT for a provider that is not on.
   */
  readonly start: (provider: string, linkUserId: number | null) => Effect.Effect<StartedSignIn, IamError>
  /**
   * The account to sign in. UNAUTHENTICATED for an unknown, spent or expired state, a code the provider refused, an
   * identity no account linked (sign-in), and an email missing, unverified or not the account's (link);
   * ALREADY_EXISTS for a link of an identity another account holds. `finisher` is the account whose credentials came
   * with the finish (null without any), asked for only when the flow is a link: only its starter may finish it.
   */
  readonly finish: (code: string, state: string, finisher: Effect.Effect<number | null, IamError>) => Effect.Effect<Account, IamError>
}>() {
  static readonly layer: Layer.Layer<OAuthSignIn, never, OAuthFlowsRepo | OAuthIdentities | Accounts | SecureRandom | IamConfig> =
    Layer.scoped(
      OAuthSignIn,
      Effect.gen(function*() {
        const repo = yield* OAuthFlowsRepo
        const identities = yield* OAuthIdentities
        const accounts = yield* Accounts
        const random = yield* SecureRandom
        const settings = (yield* IamConfig).oauth
        const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
        const enabled = Option.isSome(settings.redirectUri)

        if (enabled) yield* sweepEvery(SWEEP_EVERY, "the IAM OAuth flows", Effect.flatMap(now, repo.sweep))

        const start = traced("OAuthSignIn.start")(function*(provider: string, linkUserId: number | null) {
          if (!enabled) return yield* IamError.precondition(OFF)
          const state = flowSecretOf(yield* random.bytes(FLOW_SECRET_BYTES))
          const verifier = flowSecretOf(yield* random.bytes(FLOW_SECRET_BYTES))
          const redirect = yield* identities.authorizationUrl(provider, state, verifier)
          const expiresAt = new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(settings.flowTtl))
          yield* repo.insert(stateDigest(state), { provider, codeVerifier: redirect.codeVerifier, expiresAt, linkUserId })
          return { authorizationUrl: redirect.url, state, expiresAt } satisfies StartedSignIn
        })

        const finish = traced("OAuthSignIn.finish")(function*(code: string, state: string, finisher: Effect.Effect<number | null, IamError>) {
          if (!enabled) return yield* IamError.precondition(OFF)
          const flow = flowState(yield* repo.take(stateDigest(state)), yield* now)
          if (flow._tag === "Unknown") return yield* IamError.unauthenticated("state is not valid")
          if (flow._tag === "Expired") return yield* IamError.unauthenticated("sign-in has expired: start again")
          const finisherUserId = flow.linkUserId === null ? null : yield* finisher
          const identity = yield* identities.exchange(flow.provider, code, flow.codeVerifier)
          const linkAccount = flow.linkUserId === null ? undefined : yield* accounts.find(flow.linkUserId)
          const verdict = finishVerdict({
            linkUserId: flow.linkUserId,
            identity,
            linkedUserId: identity.subject === "" ? undefined : yield* repo.linkedUser(flow.provider, identity.subject),
            linkAccountEmail: linkAccount?.email,
            finisherUserId
          })
          if (verdict._tag === "Refused") return yield* IamError.unauthenticated(verdict.reason)
          if (verdict._tag === "Taken") return yield* IamError.exists(TAKEN)
          if (verdict._tag === "Link") {
            // Another account's link of the same identity may have won a race since the read above.
            const holder = yield* repo.link(flow.provider, identity.subject, verdict.userId, yield* now)
            if (holder !== verdict.userId) return yield* IamError.exists(TAKEN)
          }
          const account = verdict._tag === "Link" ? linkAccount : yield* accounts.find(verdict.userId)
          if (account === undefined) return yield* IamError.unauthenticated("the linked account is gone")
          return account
        })

        return { start, finish }
      })
    )
}
