import * as Layer from "effect/Layer"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { IdentityLinks } from "../users/IdentityLinks.js"
import { External } from "./External.js"
import { ExternalHttpLive } from "./ExternalHttp.js"
import { IdentitiesHttpLive } from "./IdentitiesHttp.js"
import { OAuthProvidersLive } from "../oauth/OAuthProviders.js"

/**
 * Sign-in with an external provider, and the signed-in user's linking of provider identities: both groups' handlers
 * over the provider flow and the linking service; the shared floors come from AuthHttp.
 */
export const ExternalLive = Layer.mergeAll(ExternalHttpLive, IdentitiesHttpLive.pipe(Layer.provide(AuthenticatedLive))).pipe(
  Layer.provide([External.Default.pipe(Layer.provide(OAuthProvidersLive)), IdentityLinks.Default])
)
