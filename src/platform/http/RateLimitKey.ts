import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Option from "effect/Option"
import { isIP } from "node:net"

/** Longer values are cut: an address is far shorter, and a key must fit the table's index whatever is sent. */
export const MAX_RATE_LIMIT_KEY_LENGTH = 255

/**
 * The client a request is counted against, from the value of the RATE_LIMIT_HEADER header: its first
 * comma-separated value, trimmed, as GoTrue takes it (a proxy appends the address it saw to X-Forwarded-For, so the
 * first value is the client's, or whatever the client itself sent unless the proxy replaces the header; the
 * README says which header to choose). Undefined when the header is missing or that value is blank: GoTrue then
 * lets the request through unlimited, with a warning.
 */
export const rateLimitKey = (headerValue: string | undefined): string | undefined => {
  const first = (headerValue ?? "").split(",", 1)[0]!.trim()
  return first === "" ? undefined : first.slice(0, MAX_RATE_LIMIT_KEY_LENGTH)
}

/**
 * The client a request comes from, for what is counted even without RATE_LIMIT_HEADER (guessable verifications,
 * IAM logins) and for the address a CAPTCHA provider is told: the header's client (rateLimitKey), else the connection's peer.
 * Behind a proxy without the header, the peer is the proxy and every client behind it shares what is counted.
 */
export const clientAddress = (forwarded: string | undefined, peer: string | undefined): string | undefined =>
  rateLimitKey(forwarded) ?? rateLimitKey(peer)

/** RATE_LIMIT_HEADER as a request header name (node lower-cases them), or undefined when it is unset. */
export const clientHeaderName = (setting: Option.Option<string>): string | undefined =>
  Option.getOrUndefined(Option.map(setting, (name) => name.toLowerCase()))

/** clientAddress of a request: by `header` (RATE_LIMIT_HEADER, lower-cased) when it is set, else by the connection's peer. */
export const requestClient = (request: HttpServerRequest.HttpServerRequest, header: string | undefined): string | undefined =>
  clientAddress(header === undefined ? undefined : request.headers[header], Option.getOrUndefined(request.remoteAddress))

/**
 * requestClient when it is an IP address, else the connection's peer when that is one, else 0.0.0.0: for a column
 * of type inet (a challenge bound to its client), where a header a client can write must never put anything else.
 */
export const requestClientIp = (request: HttpServerRequest.HttpServerRequest, header: string | undefined): string => {
  const client = requestClient(request, header)
  if (client !== undefined && isIP(client) !== 0) return client
  const peer = Option.getOrUndefined(request.remoteAddress)
  return peer !== undefined && isIP(peer) !== 0 ? peer : "0.0.0.0"
}

