import type { IncomingMessage } from "node:http"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { HotAnswer, HotRoute } from "../../platform/http/HotLane.js"
import { bearerAuthentication } from "../http/BearerAuthentication.js"
import { userJson } from "../users/UserJson.js"

const PATHS = new Set(["/user", "/auth/v1/user"])

/**
 * GET /user on the hot lane (platform/http/HotLane.ts): the most frequent call an app makes (auth-js getUser), and
 * on the platform's router it cost twice the CPU of the work itself. It answers only the plain success, byte for
 * byte as ProfileHttp's getUser handler does (the same bearerAuthentication, audience check and userJson, and
 * HttpServerResponse.unsafeJson's headers); anything else (no or bad token, a query string, a refusal, X-JWT-AUD that
 * does not match) goes to the API, which answers it in GoTrue's envelope. HotLaneParity.test compares the two.
 */
export const getUserHotRoute = Effect.gen(function*() {
  const authenticate = yield* bearerAuthentication
  const config = yield* AuthConfig
  return (request: IncomingMessage) => {
    if (request.method !== "GET" || !PATHS.has(request.url ?? "")) return undefined
    // A GET with a body is the app's (its body limit, and a body nobody reads).
    if (request.headers["content-length"] !== undefined || request.headers["transfer-encoding"] !== undefined) return undefined
    return authenticate(request.headers["authorization"]).pipe(
      Effect.map(({ claims, factors, identities, user }): HotAnswer | undefined => {
        // As the handler: GoTrue's requestAud, the X-JWT-AUD header, else the configured audience.
        if (claims["aud"] !== (request.headers["x-jwt-aud"] ?? config.jwt.aud)) return undefined
        const body = JSON.stringify(userJson(user, identities, factors))
        return { status: 200, headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }, body }
      }),
      Effect.orElseSucceed(() => undefined)
    )
  }
}).pipe(Effect.map((route): HotRoute => route))
