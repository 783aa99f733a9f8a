import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IamConfig } from "../config/IamConfig.js"
import { PlatformConfig } from "../config/PlatformConfig.js"
import type { PasswordHasher } from "../platform/PasswordHasher.js"
import { SecureRandom } from "../platform/SecureRandom.js"
import { Transactions } from "../platform/sql/Transactions.js"
import { Authority } from "./access/Authority.js"
import { IamPolicy } from "./access/IamPolicy.js"
import { IamPolicyRules } from "./access/IamPolicyRules.js"
import { Roles } from "./access/Roles.js"
import { RolesRepo } from "./store/RolesRepo.js"
import { Accounts } from "./accounts/Accounts.js"
import { AccountsRepo } from "./store/AccountsRepo.js"
import { LoginThrottle } from "./accounts/LoginThrottle.js"
import { LoginThrottleRepo } from "./store/LoginThrottleRepo.js"
import { bootstrapAdmin } from "./BootstrapAdmin.js"
import { IamHandlers, IamHandlersLive } from "./IamHandlers.js"
import { IamSql } from "./IamSql.js"
import { IamStartupError, IamKeys, IamKeysLive } from "./tokens/IamKeys.js"
import { IamSessions } from "./tokens/IamSessions.js"
import { PasetoTokens } from "./tokens/PasetoTokens.js"
import { Revocations } from "./tokens/Revocations.js"
import { RevocationsRepo } from "./store/RevocationsRepo.js"
import { TokenFamiliesRepo } from "./store/TokenFamiliesRepo.js"
import { TwoStepRepo } from "./store/TwoStepRepo.js"
import { TwoStep } from "./twostep/TwoStep.js"
import { OAuthIdentities } from "./oauth/OAuthIdentities.js"
import { OAuthSignIn } from "./oauth/OAuthSignIn.js"
import { OAuthFlowsRepo } from "./store/OAuthFlowsRepo.js"

export type IamServices =
  | IamHandlers
  | IamKeys
  | Accounts
  | Roles
  | Authority
  | IamSessions
  | IamPolicy
  | IamSql
  | AccountsRepo
  | RolesRepo

/**
 * Every IAM service over a migrated database; transports (gRPC, REST, RPC) sit on top of IamHandlers. The ports
 * (PasswordHasher, SecureRandom, OAuthIdentities) come from the caller, so a test can swap them; OAuthIdentities'
 * Live layer adapts the auth server's providers, which only the composition (src/cli) may import.
 */
export const IamServicesLive: Layer.Layer<
  IamServices,
  IamStartupError,
  SqlClient.SqlClient | PlatformConfig | IamConfig | PasswordHasher | SecureRandom | OAuthIdentities
> =
  IamHandlersLive.pipe(
    Layer.provideMerge(Roles.layer),
    Layer.provideMerge(Authority.layer),
    Layer.provideMerge(IamSessions.layer),
    Layer.provideMerge(OAuthSignIn.layer),
    Layer.provideMerge(Layer.mergeAll(Accounts.layer, PasetoTokens.layer, Revocations.layer, IamPolicy.layer, TwoStep.layer)),
    Layer.provideMerge(LoginThrottle.layer),
    Layer.provideMerge(IamPolicy.engine),
    Layer.provideMerge(IamPolicyRules.Default),
    Layer.provideMerge(Layer.mergeAll(
      RolesRepo.Default,
      AccountsRepo.Default,
      LoginThrottleRepo.Default,
      TokenFamiliesRepo.Default,
      RevocationsRepo.Default,
      TwoStepRepo.Default,
      OAuthFlowsRepo.Default,
      Transactions.Live
    )),
    Layer.provideMerge(Layer.merge(IamKeysLive, IamSql.layer))
  )

/** No OAuth2 sign-in (OAuthIdentities with no provider): for work that signs nobody in, as making the admin. */
export const IamWithoutOAuth: Layer.Layer<OAuthIdentities> = OAuthIdentities.Off

/** The configured first admin (AUTH_IAM_BOOTSTRAP_ADMIN_*), ensured at start-up when all three are set. */
export const IamConfiguredAdminLive: Layer.Layer<never, IamStartupError, IamServices | IamConfig> =
  Layer.effectDiscard(Effect.gen(function*() {
    const iam = yield* IamConfig
    const { email, password, username } = iam.bootstrapAdmin
    if (Option.isNone(username) || Option.isNone(email) || Option.isNone(password)) return
    const result = yield* bootstrapAdmin({ username: username.value, email: email.value, password: password.value }).pipe(
      Effect.mapError((error) => new IamStartupError({ message: `AUTH_IAM_BOOTSTRAP_ADMIN_*: ${error.message}` }))
    )
    yield* Effect.logInfo(result.created ? "iam: bootstrap admin created" : "iam: bootstrap admin ensured").pipe(
      Effect.annotateLogs("user_id", result.userId)
    )
  }))
