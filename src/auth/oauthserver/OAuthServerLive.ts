import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { OAuthServer } from "./OAuthServer.js"
import { OAuthServerEnabledLive } from "./OAuthServerEnabled.js"
import {
  AdminOAuthClientsHttpLive,
  OAuthDiscoveryHttpLive,
  OAuthGrantsHttpLive,
  OAuthIntrospectionHttpLive,
  OAuthServerHttpLive
} from "./OAuthServerHttp.js"
import { TokenIntrospection } from "./TokenIntrospection.js"

/**
 * The OAuth 2.1 / OpenID Connect server: discovery, the /oauth routes behind the OAUTH_SERVER_ENABLED gate (then the
 * bearer check where one is needed), token introspection (not gated: the service role may always ask), the user's
 * grants and the admin's clients behind their bearer checks and then the gate, over the services; the shared floors
 * come from AuthHttp (expired authorization requests are swept by AuthHousekeeping).
 */
export const OAuthServerLive = Layer.mergeAll(
  OAuthDiscoveryHttpLive,
  OAuthServerHttpLive,
  OAuthIntrospectionHttpLive,
  OAuthGrantsHttpLive,
  AdminOAuthClientsHttpLive
).pipe(
  Layer.provide(TokenIntrospection.Default),
  Layer.provide(OAuthServer.Default),
  Layer.provide([OAuthServerEnabledLive, AuthenticatedLive, AdminAuthenticatedLive])
)
