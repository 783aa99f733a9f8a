/**
 * A requested redirect_to, parsed once into the normalised pieces the redirect rules compare. Browsers follow
 * the WHATWG URL standard, so matching on what `URL` makes of the string is matching on where the browser will
 * really go; the checks before and after parsing refuse the inputs on which a naive reading of the raw string
 * and the browser's reading disagree (the classic open-redirect tricks).
 */
export interface RedirectUrl {
  /** The normalised URL, fragment included: what a link may carry. */
  readonly href: string
  /** Lower case, without the colon. */
  readonly scheme: string
  /** Lower case; IPv4 dotted, IPv6 in brackets. */
  readonly host: string
  /** Empty when it is the scheme's default. */
  readonly port: string
  /** Path and query, no fragment: allow-list entries are compared without it. */
  readonly pathAndQuery: string
  readonly ipLiteral: boolean
  readonly loopback: boolean
}

// Whitespace and control characters are dropped or trimmed by the URL parser (so "java\tscript:" is javascript:),
// format characters such as U+200B vanish in IDNA mapping, and a backslash is a slash for http(s): any of these
// means the browser reads something other than what the string shows.
const UNSAFE_CHARACTER = /[\s\p{Cc}\p{Cf}\\]/u

// Only absolute URLs with an authority: this refuses "//evil.com" (protocol-relative), "https:evil.com" (which
// the parser would read as https://evil.com), relative paths, and authority-less schemes such as javascript:alert().
const WITH_AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/

// Schemes that run or embed content in the page instead of navigating; refused even with an authority
// ("javascript://example.com/%0Aalert(1)") and even if an allow-list entry globs the scheme.
const SCRIPT_SCHEMES: ReadonlySet<string> = new Set([
  "javascript", "vbscript", "data", "blob", "file", "filesystem", "about", "view-source"
])

const DOTTED_QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/
// A last label that the URL parser (or a resolver) would take as part of an IPv4 number: 2130706433, 0x7f, 017.
const NUMERIC_LABEL = /(^|\.)(0x[0-9a-f]*|\d+)$/

const rawHostOf = (authority: string): string => {
  if (authority.startsWith("[")) {
    const end = authority.indexOf("]")
    return end === -1 ? authority : authority.slice(0, end + 1)
  }
  const colon = authority.indexOf(":")
  return colon === -1 ? authority : authority.slice(0, colon)
}

export const parseRedirectUrl = (raw: string): RedirectUrl | undefined => {
  if (UNSAFE_CHARACTER.test(raw)) return undefined
  const shape = WITH_AUTHORITY.exec(raw)
  if (shape === null) return undefined
  const authority = shape[2]!
  // Userinfo ("https://example.com@evil.com") makes the visible host a user name; a percent-encoded host is
  // decoded by the parser into something the string does not show.
  if (authority.includes("@") || authority.includes("%")) return undefined
  if (SCRIPT_SCHEMES.has(shape[1]!.toLowerCase())) return undefined

  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return undefined
  }
  if (url.username !== "" || url.password !== "") return undefined

  const host = url.hostname.toLowerCase()
  if (host === "" || host.split(".").some((label) => label === "")) return undefined
  const rawHost = rawHostOf(authority).toLowerCase()
  const ipv6 = host.startsWith("[")
  const ipv4 = DOTTED_QUAD.exec(host)
  // Decimal, octal, hex and shortened IPv4 forms all normalise to a dotted quad the string never showed.
  if (ipv4 !== null ? rawHost !== host : NUMERIC_LABEL.test(host)) return undefined
  if (ipv4 !== null && ipv4.slice(1).some((octet) => Number(octet) > 255)) return undefined

  return {
    href: url.href,
    scheme: url.protocol.slice(0, -1),
    host,
    port: url.port,
    pathAndQuery: url.pathname + url.search,
    ipLiteral: ipv4 !== null || ipv6,
    // RFC 8252 §7.3: native apps listen on a loopback address with a port chosen at run time.
    loopback: host === "localhost" || host === "[::1]" || ipv4?.[1] === "127"
  }
}
