import { createHash } from "node:crypto"

/**
 * The page a mailed link lands on when the site URL is this server (the embedded default): GET /verify and the
 * provider callback redirect there with the session in the fragment (`#access_token=…&type=signup`), an error
 * (`#error=…&error_code=otp_expired&error_description=…`, and in the query for PKCE), a PKCE `?code=`, or an
 * email change's `message`. Without a page there, success and failure both ended on a JSON 404.
 *
 * Everything is read and shown by the page's own script, in the browser: the fragment never reaches a server, and
 * the script sends nothing anywhere (the CSP's `connect-src 'none'` holds it to that). It decodes the access token's
 * claims only to name the user, writes text only (textContent, never markup), and takes the tokens out of the
 * address bar and the history once read.
 */

// Runs in the browser. No template literals: this file's own `${…}` must never reach it.
const SCRIPT = String.raw`(function () {
  "use strict";
  var text = function (id, value) { document.getElementById(id).textContent = value; };
  var lookup = function (table, key) { return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : ""; };
  var claimsOf = function (token) {
    try {
      var part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      var binary = atob(part + "===".slice((part.length + 3) % 4));
      var bytes = new Uint8Array(binary.length);
      for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      return JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      return {};
    }
  };
  var ERRORS = {
    otp_expired: "This link has expired or was already used.",
    flow_state_expired: "This sign-in took too long. Start it again.",
    flow_state_not_found: "This sign-in was already finished, or has expired. Start it again.",
    bad_oauth_state: "This sign-in was started in another browser, or has expired. Start it again in this browser.",
    bad_oauth_callback: "The provider sent the browser back without a usable answer. Start the sign-in again.",
    over_request_rate_limit: "Too many attempts from here. Wait a few minutes and try again.",
    over_email_send_rate_limit: "Too many emails were sent. Wait a little and try again.",
    user_banned: "This account is banned.",
    signup_disabled: "Sign-ups are turned off on this server.",
    provider_disabled: "This way of signing in is turned off on this server.",
    identity_already_exists: "That account is already linked to another user.",
    email_exists: "Another account already uses this email address.",
    validation_failed: "This link is not valid."
  };
  var TYPES = {
    signup: "Email address confirmed",
    email: "Email address confirmed",
    invite: "Invitation accepted",
    magiclink: "Signed in with a magic link",
    recovery: "Password recovery link accepted",
    email_change: "Email address changed"
  };
  // What the page says with nothing in its address, as the server wrote it.
  var running = { title: document.getElementById("title").textContent, lead: document.getElementById("lead").textContent };
  var show = function (view, title, lead, detail) {
    document.body.setAttribute("data-view", view);
    text("title", title);
    text("lead", lead);
    text("detail", detail);
  };
  var render = function () {
    var fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
    var query = new URLSearchParams(location.search);
    var read = function (name) { return fragment.get(name) || query.get(name) || ""; };
    var error = read("error");
    var errorCode = read("error_code");
    var token = fragment.get("access_token");
    if (error !== "" || errorCode !== "") {
      show("failed", "That did not work",
        lookup(ERRORS, errorCode) ||
          (error === "server_error" ? "The server could not finish this; its log says why." :
            error === "access_denied" && errorCode === "" ? "The sign-in was cancelled or refused." : "The link did not work."),
        "The server said: " + (read("error_description") || error) + (errorCode !== "" ? " (" + errorCode + ")" : ""));
    } else if (token) {
      var claims = claimsOf(token);
      var type = fragment.get("type") || "";
      var who = claims.email || claims.phone || (claims.is_anonymous ? "an anonymous user" : claims.sub || "an unknown user");
      show("signed-in", lookup(TYPES, type) || "Signed in", "Signed in as " + who + ".",
        (type === "recovery" || type === "invite" ? "An app would now ask for a new password (supabase.auth.updateUser({ password })). " : "") +
        "The session arrived in this page's address" +
        (typeof claims.exp === "number" ? ", valid until " + new Date(claims.exp * 1000).toLocaleString() : "") +
        ". This page only shows it and keeps nothing: set SITE_URL to your app, and supabase-js picks the session up there.");
    } else if (query.get("code")) {
      show("code", "Sign-in code received", "The browser came back with a PKCE sign-in code.",
        "Only the app that started the sign-in can exchange it (exchangeCodeForSession, with the code verifier it kept); set SITE_URL or redirectTo to that app.");
    } else if (read("message") !== "") {
      show("message", "Link accepted", read("message"), "");
    } else {
      show("running", running.title, running.lead, "");
      return;
    }
    // The tokens (or the code) leave the address bar and the history; what they said stays on the page.
    history.replaceState(null, "", location.pathname);
  };
  render();
  // Another link into this page while it is open changes only the fragment, which loads nothing.
  window.addEventListener("hashchange", render);
})();`

const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#222}" +
  "h1{font-size:1.5rem}#detail{color:#555}footer{margin-top:2.5rem;border-top:1px solid #ddd;color:#555;font-size:.9rem}" +
  "code{font-size:.9em}"

const hashOf = (source: string): string => `'sha256-${createHash("sha256").update(source, "utf8").digest("base64")}'`

/**
 * Nothing but the page's own script and style, by hash: no other script, style, image, font or frame, no request
 * from the page (connect-src), no form, no <base>, no framing, and no string ever turned into markup or code.
 */
export const LANDING_CSP = [
  "default-src 'none'",
  `script-src ${hashOf(SCRIPT)}`,
  `style-src ${hashOf(STYLE)}`,
  "connect-src 'none'",
  "img-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'"
].join("; ")

export const LANDING_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": LANDING_CSP,
  // A PKCE code or an error comes in the query: no Referer carries it on, and no cache keeps the page.
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin"
}

export interface LandingPageOptions {
  /** Whether this server keeps an outbox page to point to (the embedded default without SMTP). */
  readonly outbox: boolean
}

/** The page's HTML. What the script does not replace is the answer to a visit with nothing in the URL. */
export const landingPage = (options: LandingPageOptions): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>Gatehouse</title><style>${STYLE}</style></head><body data-view="running">` +
  `<h1 id="title">Gatehouse is running</h1>` +
  `<p id="lead">This is the auth server's own page at its site URL (<code>SITE_URL</code>), where the links in its ` +
  `mails land when no app is set up. Set <code>SITE_URL</code> to your app to land there instead.</p>` +
  `<p id="detail"></p>` +
  `<footer><ul>` +
  (options.outbox ? `<li><a href="/_outbox">Outbox</a>: the mail and texts this server kept instead of sending</li>` : "") +
  `<li><a href="/docs">API documentation</a> (<a href="/openapi.json">OpenAPI</a>)</li>` +
  `<li><a href="/health">Health</a></li>` +
  `</ul></footer><script>${SCRIPT}</script></body></html>`

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

const parse = (url: string): URL | undefined => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

/**
 * Whether the site URL is this server's own root, so the landing page is served at `/`: SITE_URL has no path, query or
 * fragment, and its origin is API_EXTERNAL_URL's (itself without a path), or this machine's loopback on the port the
 * server listens on (the embedded default's `http://localhost:PORT`). Any other site URL is an app's, and `/` stays a
 * 404 as in GoTrue.
 */
export const siteIsThisServer = (siteUrl: string, externalUrl: string, port: number): boolean => {
  const site = parse(siteUrl)
  if (site === undefined || site.pathname !== "/" || site.search !== "" || site.hash !== "" || siteUrl.includes("#")) return false
  if (site.protocol !== "http:" && site.protocol !== "https:") return false
  const external = parse(externalUrl)
  const sameAsExternal = external !== undefined && external.pathname === "/" && external.origin === site.origin
  const loopback = port !== 0 && site.protocol === "http:" && LOOPBACK_HOSTS.includes(site.hostname) &&
    (site.port === "" ? "80" : site.port) === String(port)
  return sameAsExternal || loopback
}
