import { domainToASCII } from "node:url"

/**
 * CORS_ALLOWED_ORIGINS, compiled once. Each entry is an origin, `scheme://host[:port]`, compared part by part with
 * the request's Origin, as URI_ALLOW_LIST entries are with a redirect URL: the scheme and port exactly (a default
 * port written out or left off alike), the host label by label, where a label `*` stands for any one label
 * (`https://*.example.com` allows `https://app.example.com`, never `https://example.com`,
 * `https://a.b.example.com` or `https://example.com.evil.net`; a host with a `*` needs two other labels), and a
 * port `*` for any port (`http://localhost:*`).
 * Comparing whole labels needs no glob engine, and no pattern can reach from the host into the port or beyond.
 */
export interface CorsOrigins {
  readonly entries: ReadonlyArray<OriginPattern>
}

interface OriginPattern {
  readonly scheme: string
  /** The host's labels; "*" matches any one label. An IPv6 host is one label, brackets included. */
  readonly labels: ReadonlyArray<string>
  /** Empty for the scheme's default; undefined for any port. */
  readonly port: string | undefined
}

// An origin as a browser serialises it, and as an entry is written (which may add `*` labels, a `*` port and a
// trailing slash). Non-special schemes (capacitor://localhost, chrome-extension://<id>) are origins too.
const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[0-9A-Fa-f:.]+\]|[^/:?#@[\]\s\\]+)(?::(\d{1,5}|\*))?$/
const LABEL = /^[a-z0-9_-]+$/
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: "80", https: "443", ws: "80", wss: "443" }

type ParsedOrigin = { readonly origin: OriginPattern } | { readonly problem: string }

const parseOrigin = (raw: string, wildcards: boolean): ParsedOrigin => {
  const shape = ORIGIN.exec(wildcards ? raw.replace(/\/$/, "") : raw)
  if (shape === null) return { problem: "must be an origin, scheme://host[:port], with no path" }
  const scheme = shape[1]!.toLowerCase()
  const hostText = shape[2]!.toLowerCase()
  const portText = shape[3] ?? ""
  const labels = hostText.startsWith("[")
    ? [hostText]
    // An operator may write an internationalised name; browsers send it in punycode.
    : hostText.split(".").map((label) => (/^[\x21-\x7e]*$/.test(label) ? label : domainToASCII(label) || label))
  if (!hostText.startsWith("[") && !labels.every((label) => LABEL.test(label) || (wildcards && label === "*"))) {
    return { problem: `has an invalid host: ${hostText}` }
  }
  // `https://*` or `https://*.com` would hand credentials to anyone who can buy a name.
  if (labels.includes("*") && labels.filter((label) => label !== "*").length < 2) {
    return { problem: "needs at least two literal host labels beside a *" }
  }
  if ((portText === "*" && !wildcards) || Number(portText) > 65535) return { problem: `has an invalid port: ${portText}` }
  const port = portText === "*" ? undefined : portText === DEFAULT_PORTS[scheme] ? "" : portText
  return { origin: { scheme, labels, port } }
}

/** Why a CORS_ALLOWED_ORIGINS entry cannot be used, for the configuration check at start-up; undefined when fine. */
export const corsOriginProblem = (entry: string): string | undefined => {
  const parsed = parseOrigin(entry.trim(), true)
  return "problem" in parsed ? parsed.problem : undefined
}

/** Entries that do not parse are left out; configuration loading has already refused them with a reason. */
export const compileCorsOrigins = (entries: ReadonlyArray<string>): CorsOrigins => ({
  entries: entries.flatMap((raw) => {
    const parsed = parseOrigin(raw.trim(), true)
    return "origin" in parsed ? [parsed.origin] : []
  })
})

/** Whether a request's Origin header names an allowed origin; "null" and anything not an origin never is. */
export const isAllowedOrigin = (origin: string, allowed: CorsOrigins | "any"): boolean => {
  if (allowed === "any") return true
  const parsed = parseOrigin(origin, false)
  if (!("origin" in parsed)) return false
  const { labels, port, scheme } = parsed.origin
  return allowed.entries.some((entry) =>
    entry.scheme === scheme &&
    (entry.port === undefined || entry.port === port) &&
    entry.labels.length === labels.length &&
    entry.labels.every((label, i) => label === "*" || label === labels[i])
  )
}
