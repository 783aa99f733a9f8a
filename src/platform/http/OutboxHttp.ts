import type { IncomingMessage } from "node:http"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { escapeHtml } from "./Html.js"
import { type CodeState, type KeptMessage, OUTBOX_CAPACITY, Outbox } from "../mail/Outbox.js"
import type { HttpProduct } from "./HttpEdge.js"

const PAGE = "/_outbox"
const JSON_PAGE = "/_outbox.json"

/** True for an address of this machine's loopback interface, as Node reports a socket's peer. */
export const isLoopback = (address: string): boolean =>
  address === "::1" || /^(?:::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(address)

// The socket's peer, never a header: X-Forwarded-For is the client's to write.
const peerOf = (request: HttpServerRequest.HttpServerRequest): string | undefined =>
  (NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage | undefined)?.socket?.remoteAddress

/** Where a developer on this machine reads the outbox, for a server listening on `host`:`port`. */
export const outboxPageUrl = (host: string, port: number): string => {
  const local = host === "" || host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host
  return `http://${local}:${port}${PAGE}`
}

const linkify = (escapedText: string): string =>
  escapedText.replace(/https?:\/\/[^\s<>"']+/g, (url) => `<a href="${url}" target="_blank" rel="noreferrer">${url}</a>`)

/**
 * A mail's own HTML runs in a sandboxed frame: no script, no form, no access to this page. Its links open in a new
 * tab (the base target, and popups that leave the sandbox), so a confirmation link works as it would in a mail client.
 */
const mailFrame = (html: string): string =>
  `<iframe sandbox="allow-popups allow-popups-to-escape-sandbox" srcdoc="${escapeHtml(`<base target="_blank">${html}`)}"></iframe>`

const stateText = (state: CodeState): string =>
  state.used && state.expired ? "used, expired" : state.used ? "used" : state.expired ? "expired" : "not used yet"

// The link is the server's own (API_EXTERNAL_URL); anything else would not be made a link.
const isWebUrl = (url: string): boolean => /^https?:\/\//i.test(url)

/** The message's code, its state and its link, from the facts it was made with; nothing for one without them. */
const facts = (message: KeptMessage): string => {
  if (message.about === undefined) return ""
  const { code, link } = message.about
  const state = message.state === undefined
    ? ""
    : ` <span class="state${message.state.used || message.state.expired ? " spent" : ""}">${stateText(message.state)}</span>`
  const action = link !== null && isWebUrl(link)
    ? ` · <a class="link" href="${escapeHtml(link)}" target="_blank" rel="noreferrer">follow the link</a>`
    : ""
  return `<p class="code">Code <code>${escapeHtml(code)}</code>${state}${action}</p>`
}

const entry = (message: KeptMessage): string => {
  const time = message.sentAt.toISOString()
  const heading = message.channel === "email" ? escapeHtml(message.subject) : "Text message"
  const body = message.channel === "email" ? mailFrame(message.html) : `<pre>${linkify(escapeHtml(message.body))}</pre>`
  const type = message.about === undefined ? "" : `<b>${escapeHtml(message.about.type)}</b> · `
  return `<article><h2>${heading}</h2><p class="meta">${type}${message.channel === "email" ? "Email" : "SMS"} to <b>${
    escapeHtml(message.to)
  }</b> at <time datetime="${time}">${time}</time></p>${facts(message)}${body}</article>`
}

const STYLE = "body{font:15px/1.4 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}" +
  "article{border:1px solid #ccc;border-radius:6px;padding:0 1rem 1rem;margin:1rem 0}h2{font-size:1.1rem}" +
  ".meta{color:#555}.code code{font-size:1.2rem;letter-spacing:.1em}.state{color:#176b2c}.state.spent{color:#a33}" +
  "iframe{width:100%;height:18rem;border:1px solid #eee}pre{white-space:pre-wrap}"

const page = (messages: ReadonlyArray<KeptMessage>): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gatehouse outbox</title><style>${STYLE}</style></head>` +
  `<body><h1>Outbox</h1><p>Mail and text messages this development server kept instead of delivering, ` +
  `newest first (the last ${OUTBOX_CAPACITY}), each code with whether it is still good. Reload for new ones; ` +
  `<a href="${JSON_PAGE}">${JSON_PAGE}</a> has the same as JSON.</p>` +
  (messages.length === 0 ? "<p><i>Nothing sent yet.</i></p>" : messages.map(entry).join("")) +
  "</body></html>"

/** One message in /_outbox.json: the same fields for mail and texts (null where one has none), then its body. */
const asJson = (message: KeptMessage) => ({
  type: message.about?.type ?? null,
  channel: message.channel,
  to: message.to,
  subject: message.channel === "email" ? message.subject : null,
  code: message.about?.code ?? null,
  link: message.about?.link ?? null,
  sent_at: message.sentAt.toISOString(),
  used: message.state?.used ?? null,
  expired: message.state?.expired ?? null,
  ...(message.channel === "email" ? { html: message.html, text: message.text ?? null } : { body: message.body })
})

// No script of ours or of a mail's: the page is markup only, and srcdoc frames inherit this policy.
const PAGE_HEADERS = {
  "cache-control": "no-store",
  "content-security-policy": "script-src 'none'; object-src 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

const messageSchema = {
  type: "object",
  required: ["type", "channel", "to", "subject", "code", "link", "sent_at", "used", "expired"],
  properties: {
    type: { type: ["string", "null"], description: "The verifyOtp type its code is for" },
    channel: { type: "string", enum: ["email", "sms"] },
    to: { type: "string" },
    subject: { type: ["string", "null"] },
    code: { type: ["string", "null"] },
    link: { type: ["string", "null"] },
    sent_at: { type: "string" },
    used: { type: ["boolean", "null"] },
    expired: { type: ["boolean", "null"] },
    html: { type: "string" },
    text: { type: ["string", "null"] },
    body: { type: "string" }
  }
}

const pageOperation = (summary: string, content: Record<string, unknown>) => ({
  tags: ["Pages"],
  operationId: summary === "Outbox" ? "pages.outbox" : "pages.outboxJson",
  summary,
  description: "The messages the embedded default kept instead of delivering, newest first (the last " +
    `${OUTBOX_CAPACITY}). Answered only to a client on this machine; others get 404.`,
  parameters: [],
  security: [],
  responses: {
    200: { description: summary, content },
    404: { description: "Not from this machine: the auth API's 404, as for a path that does not exist" }
  }
})

/** Adds the outbox pages to an OpenAPI document, where the server serves them (at the root only). */
export const documentOutbox = (spec: Record<string, any>): Record<string, any> => ({
  ...spec,
  paths: {
    ...spec["paths"],
    [PAGE]: { servers: [{ url: "/" }], get: pageOperation("Outbox", { "text/html": { schema: { type: "string" } } }) },
    [JSON_PAGE]: {
      servers: [{ url: "/" }],
      get: pageOperation("Outbox as JSON", {
        "application/json": { schema: { type: "object", required: ["messages"], properties: { messages: { type: "array", items: messageSchema } } } }
      })
    }
  }
})

/** The embedded default's outbox page, beside the auth API on its port. */
export class OutboxHttp extends Context.Tag("platform/OutboxHttp")<OutboxHttp, HttpProduct>() {}

/**
 * GET (and HEAD) /_outbox (HTML) and /_outbox.json, newest first. The messages carry live links and codes, so only a
 * client on this machine (a loopback peer) is answered; anyone else gets the auth API's 404, as for a path that does
 * not exist, and another method from this machine a 405 (the page's own plain one: the auth API's envelope is the
 * auth API's). Behind a reverse proxy on the same machine every client looks local: the
 * outbox exists only in the embedded development default, which is not for such a deployment.
 */
export const OutboxHttpLive: Layer.Layer<OutboxHttp, never, Outbox> = Layer.effect(
  OutboxHttp,
  Effect.map(Outbox, (outbox): HttpProduct => ({
    owns: (path) => path === PAGE || path === JSON_PAGE,
    app: Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const peer = peerOf(request)
      if (peer === undefined || !isLoopback(peer)) return yield* new HttpServerError.RouteNotFound({ request })
      if (request.method !== "GET" && request.method !== "HEAD") {
        return HttpServerResponse.unsafeJson({ code: 405, message: "Method not allowed" }, { status: 405, headers: { allow: "GET, HEAD" } })
      }
      const messages = yield* outbox.list
      return request.url.split("?", 1)[0] === JSON_PAGE
        ? HttpServerResponse.unsafeJson({ messages: messages.map(asJson) }, { headers: PAGE_HEADERS })
        : HttpServerResponse.text(page(messages), { contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS })
    }),
    refuse: (_request, _requestId, status, code, message) => HttpServerResponse.unsafeJson({ code, message }, { status })
  }))
)
