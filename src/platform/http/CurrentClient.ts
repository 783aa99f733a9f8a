import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isIP } from "node:net"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { clientAddress, clientHeaderName } from "./RateLimitKey.js"
import { headerValue, RequestPeer } from "./RequestPeer.js"

/** Longer user agents are cut: the value is the client's to write, and a row must not grow with it. */
export const MAX_USER_AGENT_LENGTH = 512

/**
 * Who the request being served comes from, read from the fiber's context where the HTTP server put the request (or,
 * on the hot lane, RequestPeer): flows deep in the services (the audit log, a session's start) need it, and none of
 * them has to carry it. `address` is counted by the rule the rate limits use (RATE_LIMIT_HEADER's first value when
 * it is set and present, else the connection's peer); outside a request there is none.
 */
export class CurrentClient extends Effect.Service<CurrentClient>()("platform/http/CurrentClient", {
  effect: Effect.gen(function*() {
    const config = yield* PlatformConfig
    const header = clientHeaderName(config.api.clientHeader)

    const request = Effect.serviceOption(HttpServerRequest.HttpServerRequest)

    /** The client's address as the rate limits count it, or undefined outside a request. */
    const address: Effect.Effect<string | undefined> = Effect.flatMap(RequestPeer, (peer) =>
      peer !== undefined
        ? Effect.succeed(clientAddress(header === undefined ? undefined : headerValue(peer.headers[header]), peer.remoteAddress))
        : Effect.map(request, Option.match({
          onNone: () => undefined,
          onSome: (request) =>
            clientAddress(header === undefined ? undefined : request.headers[header], Option.getOrUndefined(request.remoteAddress))
        })))

    /** `address` when it is an IP address, for a column of type inet: a header a client writes puts nothing else there. */
    const ip: Effect.Effect<string | undefined> = Effect.map(address, (value) => (value !== undefined && isIP(value) !== 0 ? value : undefined))

    /** The request's User-Agent, cut to MAX_USER_AGENT_LENGTH; undefined when absent or blank. */
    const userAgent: Effect.Effect<string | undefined> = Effect.flatMap(RequestPeer, (peer) =>
      peer !== undefined
        ? Effect.succeed(cut(headerValue(peer.headers["user-agent"])))
        : Effect.map(request, (found) => Option.isNone(found) ? undefined : cut(found.value.headers["user-agent"])))

    return { address, ip, userAgent } as const
  })
}) {}

const cut = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value.slice(0, MAX_USER_AGENT_LENGTH)
