import type { IncomingHttpHeaders } from "node:http"
import * as Context from "effect/Context"

/**
 * The request being served as the hot lane (HotLane.ts) serves it, without the platform's HttpServerRequest: what
 * code deep in a flow reads of the request it runs for (the audit log's client address). Undefined on the app's
 * path, where HttpServerRequest is in the context.
 */
export class RequestPeer extends Context.Reference<RequestPeer>()("platform/http/RequestPeer", {
  defaultValue: (): { readonly headers: IncomingHttpHeaders; readonly remoteAddress: string | undefined } | undefined => undefined
}) {}

/** A Node header's value as web Headers (and the platform's request) give it: a repeated field joined by ", ". */
export const headerValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  value === undefined || typeof value === "string" ? value : value.join(", ")
