import type { OAuthProviderConfig } from "../../config/AuthConfig.js"
import type { IdTokenIssuer } from "../domain/IdToken.js"
import type { OAuthProvider } from "./OAuthProvider.js"

/**
 * Everything about one identity provider, kept in its own file under providers/: how it is built from its
 * EXTERNAL_<NAME>_* settings (its endpoints, default hosts and scopes are inside), what its configuration requires,
 * and, for a provider that signs ID tokens, what POST /token?grant_type=id_token needs of it (its issuer, its key
 * URL, its claims). The registry (OAuthProviders.ts) names each descriptor once; the provider names the config reads,
 * /settings lists and the grant accepts are all derived from it.
 */
export interface ProviderDescriptor {
  /** The provider, configured; absent for a provider GoTrue configures that is not served yet (still in /settings). */
  readonly make?: (config: OAuthProviderConfig) => OAuthProvider
  /** EXTERNAL_<NAME>_URL must be set when the provider is enabled: it has no public instance to default to. */
  readonly urlRequired?: boolean
  /** For a provider whose ID tokens a native app may sign in with. */
  readonly idToken?: IdTokenIssuer
}
