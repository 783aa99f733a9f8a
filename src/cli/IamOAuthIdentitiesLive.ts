import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { configuredProviders } from "../auth/oauth/OAuthProviders.js"
import { AuthConfig } from "../config/AuthConfig.js"
import { IamConfig } from "../config/IamConfig.js"
import { IamError } from "../iam/domain/IamError.js"
import { OAuthIdentities, unsupportedProvider } from "../iam/oauth/OAuthIdentities.js"

/*
 * The IAM service's OAuth2 sign-in through the auth server's providers: the composition's adapter, since neither
 * product imports the other. Same EXTERNAL_<NAME>_* providers and credentials, but the browser comes back to
 * AUTH_IAM_OAUTH_REDIRECT_URI (which must also be registered with the provider).
 */

const NOT_CONFIRMED = "the provider did not confirm the sign-in"

/** OAuthIdentities over the auth server's enabled providers; Off while AUTH_IAM_OAUTH_REDIRECT_URI is not set. */
export const IamOAuthIdentitiesLive: Layer.Layer<OAuthIdentities, never, AuthConfig | IamConfig> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const redirectUri = (yield* IamConfig).oauth.redirectUri
    if (Option.isNone(redirectUri)) return OAuthIdentities.Off
    const providers = configuredProviders(yield* AuthConfig, redirectUri.value)
    // OAuth 1.0a (twitter) starts with a request token, not a state and a code: not an OAuth2 sign-in.
    const lookup = (name: string) =>
      Either.filterOrLeft(providers.lookup(name), (provider) => provider.begin === undefined, () => undefined).pipe(
        Either.mapLeft(() => unsupportedProvider(name))
      )
    return Layer.succeed(OAuthIdentities, {
      authorizationUrl: (name, state, verifier) =>
        Effect.map(lookup(name), (provider) => {
          const codeVerifier = provider.usesPkce ? verifier : null
          const url = provider.authorizationUrl({ state, extraScopes: [], codeVerifier, passThrough: [] })
          return { url: url.href, codeVerifier }
        }),
      exchange: (name, code, codeVerifier) =>
        Effect.gen(function*() {
          const provider = yield* lookup(name)
          const profile = yield* provider.exchange(code, codeVerifier).pipe(Effect.flatMap(provider.profile))
          return { subject: profile.providerId, email: profile.email, emailVerified: profile.emailVerified }
        }).pipe(
          Effect.catchTag("ProviderFailure", (failure) =>
            // The reason is the provider's answer, never the code or a token: logged for the operator, not answered.
            Effect.zipRight(
              Effect.logWarning(`iam: ${name} OAuth sign-in ${failure.step} failed: ${failure.reason}`),
              Effect.fail(IamError.unauthenticated(NOT_CONFIRMED))
            ))
        )
    })
  })
)
