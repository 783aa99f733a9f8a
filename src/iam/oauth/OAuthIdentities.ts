import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamError } from "../domain/IamError.js"
import type { ProviderIdentity } from "../domain/OAuthFlowRules.js"

/** Where to send the browser for a provider, and the PKCE verifier the code exchange must then present. */
export interface ProviderRedirect {
  readonly url: string
  /** The verifier given, or null when the provider takes no PKCE challenge (nothing to keep). */
  readonly codeVerifier: string | null
}

/** A provider name the port refuses: unknown, or not enabled on the auth server. */
export const unsupportedProvider = (name: string): IamError => IamError.invalid(`unsupported provider: ${name}`)

/**
 * The external identity providers as IAM's OAuth2 sign-in sees them (docs/iam.md, "OAuth2 sign-in"): the port to the
 * auth server's providers (src/auth/oauth), which IAM may not import; its Live layer is the composition's
 * (src/cli/IamOAuthIdentitiesLive.ts), built from the same EXTERNAL_<NAME>_* settings with the IAM redirect URI.
 * Errors are IAM's: INVALID_ARGUMENT for a provider that is not on, UNAUTHENTICATED when the provider did not vouch
 * for the sign-in (a bad code, a token that does not verify, a provider that cannot be reached).
 */
export class OAuthIdentities extends Context.Tag("iam/OAuthIdentities")<OAuthIdentities, {
  readonly authorizationUrl: (provider: string, state: string, codeVerifier: string) => Effect.Effect<ProviderRedirect, IamError>
  readonly exchange: (provider: string, code: string, codeVerifier: string | null) => Effect.Effect<ProviderIdentity, IamError>
}>() {
  /** No provider at all: for a server where OAuth2 sign-in is off (or cannot be, as the admin bootstrap). */
  static readonly Off: Layer.Layer<OAuthIdentities> = Layer.succeed(OAuthIdentities, {
    authorizationUrl: (provider) => Effect.fail(unsupportedProvider(provider)),
    exchange: (provider) => Effect.fail(unsupportedProvider(provider))
  })

  /**
   * One scripted provider, `name`, at https://idp.test/authorize: `exchange` answers the identity `identities` holds
   * for a code, and only with the verifier the authorization URL carried; an unknown code is the provider's refusal.
   */
  static readonly Test = (name: string, identities: Readonly<Record<string, ProviderIdentity>>): Layer.Layer<OAuthIdentities> =>
    Layer.succeed(OAuthIdentities, {
      authorizationUrl: (provider, state, codeVerifier) => {
        if (provider !== name) return Effect.fail(unsupportedProvider(provider))
        const url = new URL("https://idp.test/authorize")
        url.searchParams.set("state", state)
        url.searchParams.set("verifier", codeVerifier)
        return Effect.succeed({ url: url.href, codeVerifier })
      },
      exchange: (provider, code, codeVerifier) => {
        if (provider !== name) return Effect.fail(unsupportedProvider(provider))
        const identity = identities[code]
        return identity === undefined || codeVerifier === null
          ? Effect.fail(IamError.unauthenticated("the provider did not confirm the sign-in"))
          : Effect.succeed(identity)
      }
    })
}
