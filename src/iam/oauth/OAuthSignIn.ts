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
import { FLOW_SECRET_BYTES, flowSecretOf, flowState, linkVerdict, stateDigest } from "../domain/OAuthFlowRules.js"
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

/**
 * OAuth2 sign-in of existing IAM accounts through the auth server's providers (docs/iam.md, "OAuth2 sign-in"). Start
 * keeps a flow (its state's digest, the PKCE verifier, the provider) for AUTH_IAM_OAUTH_FLOW_TTL; finish takes it
 * (single use, whatever comes of it), exchanges the code, and signs in the account registered with the email the
 * provider vouched for. No account is ever created, and an email the provider does not call verified signs nobody in.
 */
export class OAuthSignIn extends Context.Tag("iam/OAuthSignIn")<OAuthSignIn, {
  /** FAILED_PRECONDITION when off; INVALID_ARGUMENT for a provider that is not on. */
  readonly start: (provider: string) => Effect.Effect<StartedSignIn, IamError>
  /**
   * The account to sign in. UNAUTHENTICATED for an unknown, spent or expired state, a code the provider refused, an
   * email missing or unverified, and an email no account has.
   */
  readonly finish: (code: string, state: string) => Effect.Effect<Account, IamError>
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

        const start = traced("OAuthSignIn.start")(function*(provider: string) {
          if (!enabled) return yield* IamError.precondition(OFF)
          const state = flowSecretOf(yield* random.bytes(FLOW_SECRET_BYTES))
          const verifier = flowSecretOf(yield* random.bytes(FLOW_SECRET_BYTES))
          const redirect = yield* identities.authorizationUrl(provider, state, verifier)
          const expiresAt = new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(settings.flowTtl))
          yield* repo.insert(stateDigest(state), { provider, codeVerifier: redirect.codeVerifier, expiresAt })
          return { authorizationUrl: redirect.url, state, expiresAt } satisfies StartedSignIn
        })

        const finish = traced("OAuthSignIn.finish")(function*(code: string, state: string) {
          if (!enabled) return yield* IamError.precondition(OFF)
          const flow = flowState(yield* repo.take(stateDigest(state)), yield* now)
          if (flow._tag === "Unknown") return yield* IamError.unauthenticated("state is not valid")
          if (flow._tag === "Expired") return yield* IamError.unauthenticated("sign-in has expired: start again")
          const verdict = linkVerdict(yield* identities.exchange(flow.provider, code, flow.codeVerifier))
          if (verdict._tag === "NoEmail") return yield* IamError.unauthenticated("the provider gave no email")
          if (verdict._tag === "Unverified") return yield* IamError.unauthenticated("the provider has not verified this email")
          // The email is the provider's word, verified: it names an account that exists, never one to create.
          const account = yield* accounts.findByEmail(verdict.email)
          if (account === undefined) return yield* IamError.unauthenticated("no account has this email")
          return account
        })

        return { start, finish }
      })
    )
}
