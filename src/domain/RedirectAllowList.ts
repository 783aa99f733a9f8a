import { domainToASCII } from "node:url"
import type { RedirectUrl } from "./RedirectUrl.js"

/**
 * URI_ALLOW_LIST, compiled once at start-up. Each entry is `scheme://host[:port][path[?query]]`, and each of those
 * parts is matched on its own against the parsed, normalised redirect URL, so a wildcard can never reach from
 * one part into another: `https://**.example.com/**` cannot match `https://evil.com/.example.com/`, which a
 * glob over the whole string would.
 *
 * Wildcards, as in GoTrue's globs (separators `.` and `/`):
 * - `*` matches within one host label, one path segment, or one dotted scheme part;
 * - `**` matches any run, separators included;
 * - in the port, `*` matches any port (the scheme's default too).
 * Everything else is literal. An entry without a path matches the bare origin (`/` or nothing), as GoTrue's
 * whole-string match does; the fragment of the redirect URL is never compared.
 *
 * Hand-written rather than picomatch or minimatch: both know only `/` as a separator, and here a host `*` must
 * stop at dots while a path `*` stops only at slashes; per part, the whole compiler is a few lines.
 */
export interface RedirectAllowList {
  readonly entries: ReadonlyArray<AllowListEntry>
}

interface AllowListEntry {
  readonly scheme: RegExp
  readonly host: RegExp
  /** undefined: any port. */
  readonly port: string | undefined
  /** undefined: the bare origin only. */
  readonly path: RegExp | undefined
}

const ENTRY = /^([A-Za-z*][A-Za-z0-9+.*-]*):\/\/([^/?#]*)([^#]*)/
const HOST_GLOB = /^[a-z0-9*_-]+(\.[a-z0-9*_-]+)*$/
const IPV6_HOST = /^\[[0-9a-f:.]+\]$/
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: "80", https: "443", ws: "80", wss: "443", ftp: "21" }

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

/** `*` stays inside one part (it never crosses `separator`), `**` crosses anything. */
const globToRegExp = (glob: string, separator: string): RegExp => {
  const one = `[^${escapeRegExp(separator)}]*`
  const source = glob.split("**").map((run) => run.split("*").map(escapeRegExp).join(one)).join(".*")
  return new RegExp(`^${source}$`)
}

type Parsed = { readonly entry: AllowListEntry } | { readonly problem: string }

const parseEntry = (raw: string): Parsed => {
  const shape = /[\s\\]/.test(raw) ? null : ENTRY.exec(raw)
  if (shape === null) {
    return { problem: "must be scheme://host[:port][/path], with * or ** as wildcards" }
  }
  const scheme = shape[1]!.toLowerCase()
  const authority = shape[2]!.toLowerCase()
  const rest = shape[3]!
  if (authority.includes("@")) return { problem: "must not contain user information (@)" }

  const bracket = authority.startsWith("[") ? authority.indexOf("]") + 1 : 0
  const colon = authority.indexOf(":", bracket)
  const hostText = colon === -1 ? authority : authority.slice(0, colon)
  const portText = colon === -1 ? "" : authority.slice(colon + 1)

  // Operators may write an internationalised name; redirect URLs arrive normalised to punycode. ASCII labels are
  // left alone: domainToASCII would also decode percent escapes and read "127" as an IPv4 number.
  const host = IPV6_HOST.test(hostText)
    ? hostText
    : hostText.split(".").map((label) => /^[\x21-\x7e]*$/.test(label) ? label : domainToASCII(label) || label).join(".")
  if (!IPV6_HOST.test(host) && !HOST_GLOB.test(host)) return { problem: `has an invalid host: ${hostText}` }
  if (portText !== "*" && !/^\d{0,5}$/.test(portText)) return { problem: `has an invalid port: ${portText}` }

  return {
    entry: {
      scheme: globToRegExp(scheme, "."),
      host: IPV6_HOST.test(host) ? new RegExp(`^${escapeRegExp(host)}$`) : globToRegExp(host, "."),
      port: portText === "*" ? undefined : portText === DEFAULT_PORTS[scheme] ? "" : portText,
      path: rest === "" ? undefined : globToRegExp(rest, "/")
    }
  }
}

/** Why an entry cannot be used, for the configuration check at start-up; undefined when it is fine. */
export const allowListEntryProblem = (entry: string): string | undefined => {
  const parsed = parseEntry(entry)
  return "problem" in parsed ? parsed.problem : undefined
}

/** Entries that do not parse are left out; configuration loading has already refused them with a reason. */
export const compileAllowList = (entries: ReadonlyArray<string>): RedirectAllowList => ({
  entries: entries.flatMap((raw) => {
    const parsed = parseEntry(raw.trim())
    return "entry" in parsed ? [parsed.entry] : []
  })
})

export const isAllowedRedirect = (url: RedirectUrl, allowList: RedirectAllowList): boolean =>
  // An IP host is only trusted on loopback (a native app's listener); public addresses must be names.
  (!url.ipLiteral || url.loopback) &&
  allowList.entries.some((entry) =>
    entry.scheme.test(url.scheme) &&
    entry.host.test(url.host) &&
    (entry.port === undefined || entry.port === url.port) &&
    (entry.path === undefined ? url.pathAndQuery === "" || url.pathAndQuery === "/" : entry.path.test(url.pathAndQuery))
  )
