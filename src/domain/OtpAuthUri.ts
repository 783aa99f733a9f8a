import * as Option from "effect/Option"

/**
 * The otpauth URI a TOTP enrolment answers with (and the QR code shows), byte for byte as GoTrue writes it. GoTrue
 * calls pquerna/otp's totp.Generate, which builds a Go url.URL: the label `<issuer>:<account>` escaped as a Go path,
 * and the query from its own EncodeQuery (url.Values.Encode with url.PathEscape, so a space is `%20`, never `+`,
 * and the keys come sorted). Go's escaping leaves some reserved characters bare that encodeURIComponent would
 * escape (`:` `@` `&` `=` `+` `$`, and in the path also `/` `;` `,`) and escapes some it leaves bare (`!` `'` `(`
 * `)` `*`), so this is Go's rule written out, not the Web platform's.
 */
export interface OtpAuthKey {
  readonly issuer: string
  /** The user's email: GoTrue's account name. */
  readonly account: string
  /** Base32 without padding. */
  readonly secret: string
}

/**
 * GoTrue's URI for `key`, or None where totp.Generate refuses (an empty issuer or account): GoTrue then answers 500
 * "Error generating QR Code".
 */
export const otpAuthUri = (key: OtpAuthKey): Option.Option<string> =>
  key.issuer === "" || key.account === ""
    ? Option.none()
    : Option.some(
      `otpauth://totp/${goEscape(`${key.issuer}:${key.account}`, GO_PATH)}` +
        `?algorithm=SHA1&digits=6&issuer=${goEscape(key.issuer, GO_PATH_SEGMENT)}&period=30` +
        `&secret=${goEscape(key.secret, GO_PATH_SEGMENT)}`
    )

/** The reserved characters Go's url package leaves bare in a whole path (mode encodePath): all but `?`. */
const GO_PATH = new Set("$&+,/:;=@")
/** … and in one path segment (mode encodePathSegment, url.PathEscape): `/`, `;`, `,` and `?` are escaped. */
const GO_PATH_SEGMENT = new Set("$&+:=@")

const UNRESERVED = /^[A-Za-z0-9\-_.~]$/

/** Go's url.escape: each UTF-8 byte that is neither unreserved nor allowed bare becomes `%XX` (upper-case hex). */
const goEscape = (text: string, bare: ReadonlySet<string>): string => {
  let out = ""
  for (const byte of new TextEncoder().encode(text)) {
    const char = String.fromCharCode(byte)
    out += byte < 0x80 && (UNRESERVED.test(char) || bare.has(char))
      ? char
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

/**
 * The issuer a TOTP factor gets when the request names none: the host of SITE_URL, port included, exactly as
 * written, which is what Go's url.ParseRequestURI(SITE_URL).Host gives. None where Go refuses the URL: GoTrue then
 * answers 500 "site url is improperly formatted". The WHATWG URL parser would lower-case the host and drop a
 * default port (`https://App.example:443` → `app.example`), changing the name authenticator apps show, so Go's
 * rule is written out here. A URL with no authority (`http:/path`, `mailto:x`) has the empty host, which
 * otpAuthUri then refuses, as GoTrue's totp.Generate does.
 */
export const defaultIssuer = (siteUrl: string): Option.Option<string> => {
  // url.parse(rawURL, viaRequest = true): no control bytes, not empty; "*" is a path.
  if (siteUrl === "" || CONTROL.test(siteUrl)) return Option.none()
  if (siteUrl === "*") return Option.some("")
  if (siteUrl.startsWith(":")) return Option.none()
  const scheme = SCHEME.exec(siteUrl)?.[0] ?? ""
  const rest = siteUrl.slice(scheme.length).split("?")[0]!
  // Without a scheme a request URI must be a path; with one, a rootless rest is opaque: neither has a host.
  if (!rest.startsWith("/")) return scheme === "" ? Option.none() : Option.some("")
  if (scheme === "" || !rest.startsWith("//")) return validEscapes(rest) ? Option.some("") : Option.none()
  const slash = rest.indexOf("/", 2)
  const authority = slash === -1 ? rest.slice(2) : rest.slice(2, slash)
  const path = slash === -1 ? "" : rest.slice(slash)
  if (!validEscapes(path)) return Option.none()
  const at = authority.lastIndexOf("@")
  if (at !== -1 && !(USERINFO.test(authority.slice(0, at)) && validEscapes(authority.slice(0, at)))) return Option.none()
  return goHost(authority.slice(at + 1))
}

const CONTROL = /[\x00-\x1f\x7f]/
/** Go's getScheme: a letter, then letters, digits, `+`, `-` or `.`, up to the first `:`. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*:/
const USERINFO = /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/
/** The ASCII characters Go accepts in a host (shouldEscape in mode encodeHost), besides `%` escapes. */
const HOST = /^[A-Za-z0-9\-._~!$&'()*+,;=:[\]<>"%\u0080-\uffff]*$/
const PORT = /^(:[0-9]*)?$/

/** Every `%` starts a two-digit hex escape, as Go's unescape requires. */
const validEscapes = (text: string): boolean => !/%(?![0-9A-Fa-f]{2})/.test(text)

/** Go's parseHost: a bracketed IPv6 literal or a name, then an optional all-digit port; `%` escapes decoded. */
const goHost = (host: string): Option.Option<string> => {
  const colonPort = host.startsWith("[")
    ? host.lastIndexOf("]") === -1 ? undefined : host.slice(host.lastIndexOf("]") + 1)
    : host.lastIndexOf(":") === -1 ? "" : host.slice(host.lastIndexOf(":"))
  if (colonPort === undefined || !PORT.test(colonPort) || !HOST.test(host)) return Option.none()
  return goUnescapeHost(host)
}

/**
 * Go's unescape in host mode: an escape may only stand for a non-ASCII byte (or be `%25`), and the bytes are then
 * read as UTF-8.
 */
const goUnescapeHost = (host: string): Option.Option<string> => {
  if (!validEscapes(host)) return Option.none()
  const escapes = host.match(/%[0-9A-Fa-f]{2}/g) ?? []
  if (escapes.some((escape) => escape !== "%25" && parseInt(escape.slice(1), 16) < 0x80)) return Option.none()
  if (escapes.length === 0) return Option.some(host)
  const bytes = [...host.matchAll(/%[0-9A-Fa-f]{2}|[^%]+/g)].flatMap(([part]) =>
    part.startsWith("%") ? [parseInt(part.slice(1), 16)] : [...new TextEncoder().encode(part)]
  )
  return Option.some(new TextDecoder().decode(new Uint8Array(bytes)))
}
