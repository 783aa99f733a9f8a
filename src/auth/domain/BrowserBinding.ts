import { createHash } from "node:crypto"
import { FLOW_STATE_EXPIRY_SECONDS } from "./Pkce.js"

/*
 * Gatehouse's own (GoTrue's `state` is a bearer ticket): an OAuth flow is bound to the browser that started it, so a
 * /callback carrying someone else's state and code (login CSRF, a leaked callback URL, an attacker's link flow
 * finished in a victim's browser) is refused.
 *
 * The binding is one random value per browser, kept in an HttpOnly cookie and reused by every flow the browser
 * starts while the cookie lives; each flow stores the value's digest, and /callback claims a flow only when the
 * cookie's digest is the one stored. One value per browser rather than one per flow (an HMAC of the flow id, say):
 * under one cookie name a second tab's flow would overwrite the first tab's cookie and break that sign-in, and a
 * cookie name per flow grows a cookie per tab. The database holds only digests, so a leaked row presents nothing.
 */

/** The binding cookie for a server whose public URL (API_EXTERNAL_URL) is `externalUrl`. */
export interface BrowserBindingCookie {
  readonly name: string
  /** https: Secure and SameSite=None, so form_post providers (Apple), which POST /callback cross-site, send it. */
  readonly secure: boolean
  /** Without Secure a browser refuses SameSite=None; Lax still rides the top-level GET /callback redirect. */
  readonly sameSite: "none" | "lax"
  /** The flow's lifetime: a cookie outliving every flow it could bind is of no use. */
  readonly maxAgeSeconds: number
  /** Both the root mount and /auth/v1 (and `__Host-` requires it). */
  readonly path: "/"
}

/**
 * On https the `__Host-` prefix makes browsers refuse the cookie from a sibling subdomain or with a Domain, so a
 * page on another subdomain cannot plant its own binding in a victim's browser (cookie tossing).
 */
export const browserBindingCookie = (externalUrl: string): BrowserBindingCookie => {
  const secure = externalUrl.toLowerCase().startsWith("https:")
  return {
    name: secure ? "__Host-gatehouse-oauth" : "gatehouse-oauth",
    secure,
    sameSite: secure ? "none" : "lax",
    maxAgeSeconds: FLOW_STATE_EXPIRY_SECONDS,
    path: "/"
  }
}

/** The bytes of a binding: 256 bits, base64url in the cookie. */
export const BROWSER_BINDING_BYTES = 32

const BINDING = /^[A-Za-z0-9_-]{43}$/

/** Only a value this server could have issued is reused or looked up; anything else counts as no cookie. */
export const isBrowserBinding = (value: string | undefined): value is string => value !== undefined && BINDING.test(value)

/** The browser's binding for a new flow: the one its cookie already holds, so its other tabs' flows stay valid. */
export const browserBindingFor = (presented: string | undefined, fresh: string): string =>
  isBrowserBinding(presented) ? presented : fresh

export const digestBrowserBinding = (value: string): string => createHash("sha256").update(value).digest("hex")
