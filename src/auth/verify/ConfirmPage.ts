import { createHash } from "node:crypto"
import type { MessageLocale } from "../../domain/MessageLocale.js"
import { escapeHtml } from "../../platform/http/Html.js"
import type { ConfirmPageTexts } from "../messages/BuiltInTexts.js"

/** Where the page's button posts, relative to GET /verify (see confirmFormAction). */
export const CONFIRM_PATH = "/verify/confirm"

/** What the page carries from the link to the POST, as the link named them. */
export interface ConfirmFields {
  readonly token?: string | undefined
  readonly type?: string | undefined
  readonly redirect_to?: string | undefined
}

const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}" +
  "h1{font-size:1.5rem}button{font:inherit;padding:.6rem 1.4rem;border:0;border-radius:.4rem;background:#1f6feb;color:#fff;cursor:pointer}"

const STYLE_HASH = `'sha256-${createHash("sha256").update(STYLE, "utf8").digest("base64")}'`

/**
 * The form's action, relative to the page's own address, so the button posts under whatever prefix the browser
 * reached the page by: /auth/v1/verify posts to /auth/v1/verify/confirm, /verify to /verify/confirm, and so does a
 * gateway that strips its own prefix before the request gets here. `path` is the path the server was asked for
 * (the route matched, so its last segment is the route's own).
 */
export const confirmFormAction = (path: string): string =>
  path.endsWith("/") ? "confirm" : `${path.slice(path.lastIndexOf("/") + 1)}/confirm`

/**
 * The CSP source that lets the form's answer take the browser on to `target` (browsers hold the redirect after a
 * form's submission to form-action as well): its origin for http(s), its scheme for an app's own (myapp://); none
 * for what is not a URL (the answer then redirects there, if anywhere, only as far as 'self' allows).
 */
export const redirectSource = (target: string): string | undefined => {
  const url = URL.parse(target)
  if (url === null) return undefined
  if (url.protocol === "http:" || url.protocol === "https:") return url.origin === "null" ? undefined : url.origin
  return /^[a-z][a-z0-9+.-]*:$/i.test(url.protocol) ? url.protocol : undefined
}

/**
 * No script at all, the one style by hash, nothing loaded, no framing; the form may post only to this server and
 * its answer go on only to where the link redirects.
 */
export const confirmPageCsp = (target: string): string => {
  const source = redirectSource(target)
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    `form-action 'self'${source === undefined ? "" : ` ${source}`}`,
    "base-uri 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
}

/** The page's headers: the link's token is in its address and its form, so nothing caches or passes either on. */
export const confirmPageHeaders = (target: string): Readonly<Record<string, string>> => ({
  "content-security-policy": confirmPageCsp(target),
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY"
})

const hidden = (name: string, value: string | undefined): string =>
  value === undefined ? "" : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`

/**
 * The page GET /verify answers with MAILER_LINK_CONFIRM_PAGE on: a heading, a sentence and one button, whose form
 * posts the link's fields back. Opening it spends nothing, so a mail scanner that follows every link leaves the
 * link to its owner; every value is escaped.
 */
export const confirmPage = (texts: ConfirmPageTexts, locale: MessageLocale, action: string, fields: ConfirmFields): string =>
  `<!doctype html><html lang="${locale}"><head><meta charset="utf-8">` +
  `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">` +
  `<title>${escapeHtml(texts.title)}</title><style>${STYLE}</style></head><body><main>` +
  `<h1>${escapeHtml(texts.heading)}</h1><p>${escapeHtml(texts.explanation)}</p>` +
  `<form method="post" action="${escapeHtml(action)}" enctype="application/x-www-form-urlencoded">` +
  hidden("token", fields.token) + hidden("type", fields.type) + hidden("redirect_to", fields.redirect_to) +
  `<button type="submit">${escapeHtml(texts.button)}</button></form></main></body></html>`
