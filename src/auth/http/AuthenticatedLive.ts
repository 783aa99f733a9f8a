import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Authenticated } from "../contract/Authenticated.js"
import { bearerAuthentication } from "./BearerAuthentication.js"

/** GoTrue's requireAuthentication as the API's security middleware (the check itself: bearerAuthentication). */
export const AuthenticatedLive = Layer.effect(
  Authenticated,
  Effect.gen(function*() {
    const authenticate = yield* bearerAuthentication
    const authenticateRequest = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticate(request.headers["authorization"]))
    // The platform's decoded bearer value is ignored (see bearerAuthentication), so one prebuilt effect serves all.
    return { bearer: () => authenticateRequest }
  })
)
