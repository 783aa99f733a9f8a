/**
 * URLs the way Go's net/url reads them, for the OAuth server's checks that GoTrue makes with `url.Parse` and
 * `url.ParseRequestURI`: a client's redirect URIs, its client_uri and logo_uri, and the `resource` of an
 * authorization request. WHATWG's URL parser normalises and disagrees with Go on many inputs (`https:example.com`
 * has a host there and none in Go), so the few parts GoTrue reads are taken apart here as Go does.
 */

/** What Go's url.Parse leaves in the parts GoTrue reads; undefined when it returns an error. */
export interface GoUrl {
  readonly scheme: string
  readonly opaque: string
  /** Host with its port (Go's URL.Host). */
  readonly host: string
  readonly path: string
  readonly rawQuery: string
  readonly fragment: string
}

const hasControlByte = (s: string): boolean => /[\x00-\x1f\x7f]/.test(s)

/** Go's unescape: every `%` followed by two hex digits. In a host, only characters a host may hold. */
const unescapes = (s: string, host: boolean): boolean => {
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c === "%") {
      if (!/^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) return false
      // Go's encodeHost mode: an escape below %80 is refused, but %25 (an IPv6 zone's %).
      if (host && parseInt(s[i + 1]!, 16) < 8 && s.slice(i, i + 3) !== "%25") return false
      i += 2
    } else if (host && c.charCodeAt(0) < 0x80 && !/[A-Za-z0-9\-_.~!$&'()*+,;=:[\]<>"]/.test(c)) {
      return false
    }
  }
  return true
}

/** Go's getScheme: the scheme, lower-cased, and the rest; undefined for "missing protocol scheme". */
const splitScheme = (raw: string): { scheme: string; rest: string } | undefined => {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!
    if (/[A-Za-z]/.test(c)) continue
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return { scheme: "", rest: raw }
      continue
    }
    if (c === ":") {
      if (i === 0) return undefined
      return { scheme: raw.slice(0, i).toLowerCase(), rest: raw.slice(i + 1) }
    }
    return { scheme: "", rest: raw }
  }
  return { scheme: "", rest: raw }
}

const validOptionalPort = (port: string): boolean => port === "" || /^:[0-9]*$/.test(port)

/** Go's parseHost: the host as written, or undefined when Go refuses it. */
const parseHost = (host: string): string | undefined => {
  if (host.startsWith("[")) {
    const end = host.lastIndexOf("]")
    if (end < 0) return undefined
    if (!validOptionalPort(host.slice(end + 1))) return undefined
  } else {
    const colon = host.lastIndexOf(":")
    if (colon >= 0 && !validOptionalPort(host.slice(colon))) return undefined
  }
  return unescapes(host, true) ? host : undefined
}

const USERINFO = /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/

const parse = (raw: string, viaRequest: boolean): Omit<GoUrl, "fragment"> | undefined => {
  if (hasControlByte(raw)) return undefined
  if (raw === "" && viaRequest) return undefined
  if (raw === "*") return { scheme: "", opaque: "", host: "", path: "*", rawQuery: "" }
  const split = splitScheme(raw)
  if (split === undefined) return undefined
  const { scheme } = split
  let rest = split.rest
  let rawQuery = ""
  if (rest.endsWith("?") && rest.split("?").length === 2) {
    rest = rest.slice(0, -1)
  } else {
    const q = rest.indexOf("?")
    if (q >= 0) {
      rawQuery = rest.slice(q + 1)
      rest = rest.slice(0, q)
    }
  }
  if (!rest.startsWith("/")) {
    if (scheme !== "") return { scheme, opaque: rest, host: "", path: "", rawQuery }
    if (viaRequest) return undefined
    const slash = rest.indexOf("/")
    const segment = slash < 0 ? rest : rest.slice(0, slash)
    if (segment.includes(":")) return undefined
  }
  let host = ""
  if ((scheme !== "" || (!viaRequest && !rest.startsWith("///"))) && rest.startsWith("//")) {
    const afterSlashes = rest.slice(2)
    const slash = afterSlashes.indexOf("/")
    const authority = slash < 0 ? afterSlashes : afterSlashes.slice(0, slash)
    rest = slash < 0 ? "" : afterSlashes.slice(slash)
    const at = authority.lastIndexOf("@")
    if (at >= 0 && !USERINFO.test(authority.slice(0, at))) return undefined
    const parsedHost = parseHost(at < 0 ? authority : authority.slice(at + 1))
    if (parsedHost === undefined) return undefined
    host = parsedHost
  }
  if (!unescapes(rest, false)) return undefined
  return { scheme, opaque: "", host, path: rest, rawQuery }
}

/** Go's url.Parse: the fragment split off first (and unescaped), the rest parsed as a URL reference. */
export const goUrlParse = (raw: string): GoUrl | undefined => {
  const hash = raw.indexOf("#")
  const main = hash < 0 ? raw : raw.slice(0, hash)
  const fragment = hash < 0 ? "" : raw.slice(hash + 1)
  const parsed = parse(main, false)
  if (parsed === undefined || !unescapes(fragment, false)) return undefined
  return { ...parsed, fragment }
}

/** Go's url.ParseRequestURI succeeds: an absolute URI or an absolute path (no fragment split off). */
export const isGoRequestUri = (raw: string): boolean => parse(raw, true) !== undefined

/** Go's URL.Hostname(): the host without its port and without an IPv6 literal's brackets. */
export const goHostname = (host: string): string => {
  if (host.startsWith("[")) {
    const end = host.indexOf("]")
    return end < 0 ? host.slice(1) : host.slice(1, end)
  }
  const colon = host.lastIndexOf(":")
  return colon < 0 ? host : host.slice(0, colon)
}

const DANGEROUS_SCHEMES = ["javascript", "data", "file", "vbscript", "about", "blob"]
const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "::1"]

/**
 * Why a redirect URI may not be registered (GoTrue's validateRedirectURI, its words), or undefined when it may.
 * Gatehouse adds one rule: GoTrue stores a client's redirect URIs comma-joined, so a URI holding a comma would come
 * back as two; it is refused here instead of being stored wrong.
 */
export const redirectUriProblem = (uri: string): string | undefined => {
  if (uri === "") return "redirect URI cannot be empty"
  const parsed = goUrlParse(uri)
  if (parsed === undefined) return "invalid URL format"
  if (parsed.scheme === "" || parsed.host === "") return "must have scheme and host"
  if (DANGEROUS_SCHEMES.includes(parsed.scheme.toLowerCase())) return `scheme '${parsed.scheme}' is not allowed for security reasons`
  if (parsed.scheme === "http" && !LOOPBACK_HOSTS.includes(goHostname(parsed.host))) return "HTTP scheme only allowed for localhost"
  if (parsed.fragment !== "") return "fragment not allowed in redirect URI"
  if (uri.includes(",")) return "a comma is not allowed in a redirect URI"
  return undefined
}

/** Whether a URI is one a browser may be shown as a link or image: https, or http on a loopback host. */
export const isHttpsOrLoopbackUri = (uri: string): boolean => {
  const parsed = goUrlParse(uri)
  if (parsed === undefined || parsed.host === "") return false
  const scheme = parsed.scheme.toLowerCase()
  return scheme === "https" || (scheme === "http" && LOOPBACK_HOSTS.includes(goHostname(parsed.host)))
}

/** Why an authorization request's `resource` (RFC 8707) is refused, in GoTrue's words, or undefined. */
export const resourceProblem = (resource: string): string | undefined => {
  if (resource === "") return undefined
  const parsed = goUrlParse(resource)
  if (parsed === undefined) return "resource must be a valid URI"
  if (parsed.scheme === "") return "resource must be an absolute URI"
  if (parsed.fragment !== "") return "resource must not include a fragment component"
  if (parsed.rawQuery !== "") return "resource must not include a query component"
  return undefined
}
