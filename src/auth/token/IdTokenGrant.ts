import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { decodeJwt } from "jose"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { Session } from "../contract/Session.js"
import { AuthError } from "../domain/AuthError.js"
import { badIdToken, checkAccessTokenHash, checkAudience, checkNonce, resolveIdTokenProvider } from "../domain/IdToken.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { verifyIdToken } from "../oauth/IdTokenVerifier.js"
import { ID_TOKEN_PROVIDERS, providerSettings } from "../oauth/OAuthProviders.js"
import { Confirmations } from "../messages/Confirmations.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { ExternalAccounts } from "../users/ExternalAccounts.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export interface IdTokenGrantRequest {
  readonly id_token?: string | null | undefined
  readonly access_token?: string | null | undefined
  readonly nonce?: string | null | undefined
  readonly provider?: string | null | undefined
  readonly client_id?: string | null | undefined
  readonly issuer?: string | null | undefined
}

const unverifiedIssuer = (token: string): string | undefined => {
  try {
    const iss = decodeJwt(token).iss
    return typeof iss === "string" ? iss : undefined
  } catch {
    return undefined
  }
}

/**
 * POST /token?grant_type=id_token (reference §2.6): a native app's ID token from apple, google, azure or keycloak,
 * verified against the provider's published keys (signature, issuer, expiry), its client ids (audience) and the
 * request's nonce, then signed in through ExternalAccounts. The session's amr is `oauth`, as GoTrue records it.
 */
export class IdTokenGrant extends Effect.Service<IdTokenGrant>()("auth/IdTokenGrant", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const accounts = yield* ExternalAccounts
    const confirmations = yield* Confirmations
    const tokens = yield* AccessTokens
    const settings = (name: string) => providerSettings(config, name)

    const signIn = traced("IdTokenGrant.signIn")(function*(request: IdTokenGrantRequest): Effect.fn.Return<Session, AuthError> {
      const idToken = request.id_token ?? ""
      const providerName = request.provider ?? ""
      const issuer = request.issuer ?? ""
      if (idToken === "") return yield* AuthError.oauth("invalid request", "id_token required")
      if (providerName === "" && ((request.client_id ?? "") === "" || issuer === "")) {
        return yield* AuthError.oauth("invalid request", "provider or client_id and issuer required")
      }
      const provider = yield* resolveIdTokenProvider(
        { provider: providerName, issuer, unverifiedIssuer: unverifiedIssuer(idToken) },
        ID_TOKEN_PROVIDERS,
        settings
      )
      const { algorithm, claims } = yield* verifyIdToken(idToken, {
        jwksUrl: provider.jwksUrl,
        issuer: provider.issuer,
        // The audience is checked below, against every client id, in GoTrue's words.
        requiredClaims: ["exp"]
      }).pipe(
        // Whatever went wrong (signature, issuer, expiry, a key set that would not load) the client hears one thing.
        Effect.mapError(badIdToken)
      )
      const profile = yield* provider.profile(claims)
      yield* checkAudience(claims["aud"], provider.clientIds)
      yield* checkNonce(claims["nonce"], request.nonce ?? "")
      yield* checkAccessTokenHash(algorithm, claims["at_hash"], request.access_token ?? "")
      const at = new Date(yield* Clock.currentTimeMillis)
      const { user } = yield* accounts.signIn(provider.name, profile).pipe(
        Effect.catchTag("EmailNeedsVerification", (refused) =>
          Effect.zipRight(confirmations.confirmExternalEmail(refused.user, config.siteUrl, at), Effect.fail(refused.toAuthError())))
      )
      return yield* tokens.issue(user, "oauth", at)
    })

    return { signIn } as const
  }),
  dependencies: [
    ExternalAccounts.Default,
    AccessTokens.Default,
    FlowStateRepo.Default,
    UsersRepo.Default,
    Users.Default,
    AuthMessages.Default,
    PendingTokens.Default,
    AuditLog.Default,
    Transactions.Live
  ]
}) {}
