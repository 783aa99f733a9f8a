import * as Either from "effect/Either"

/** The chains Web3 sign-in serves, by the `chain` value auth-js posts. */
export type Web3Chain = "ethereum" | "solana"

const MIN_MESSAGE_BYTES = 64
const MAX_MESSAGE_BYTES = 20 * 1024

/** GoTrue's bounds on a posted message, in bytes (Go's len), not characters: a validation failure's text, or undefined. */
export const web3MessageSizeProblem = (raw: string): string | undefined => {
  const bytes = new TextEncoder().encode(raw).length
  return bytes < MIN_MESSAGE_BYTES ? "message is too short" : bytes > MAX_MESSAGE_BYTES ? "message must not exceed 20KB" : undefined
}

/**
 * A parsed Sign-In-With-Ethereum (EIP-4361) or Sign-In-With-Solana message, as GoTrue's siwe/siws parsers read it.
 * Times are epoch milliseconds.
 */
export interface Web3Message {
  readonly chain: Web3Chain
  readonly raw: string
  readonly domain: string
  readonly address: string
  /** Ethereum: null when the message has none; Solana: "" (GoTrue's two structs differ, and both are stored). */
  readonly statement: string | null
  readonly uri: string
  readonly version: string
  /** The Chain ID line as written, "" when absent. */
  readonly chainId: string
  readonly nonce: string
  readonly issuedAt: number
  readonly expirationTime: number | undefined
  readonly notBefore: number | undefined
  readonly requestId: string | undefined
  readonly resources: ReadonlyArray<string>
}

interface Dialect {
  readonly prefix: string
  readonly account: string
  readonly address: RegExp
  readonly addressError: string
  readonly chainId: (value: string) => boolean
  readonly noStatement: string | null
  /** siwe refuses an Issued At of Go's zero time as missing; siws keeps it and refuses it after the loop. */
  readonly zeroIssuedAtIsMissing: boolean
}

const DIALECTS: Record<Web3Chain, Dialect> = {
  ethereum: {
    prefix: "siwe",
    account: "Ethereum",
    address: /^0x[a-fA-F0-9]{40}$/,
    addressError: "wallet address is not a valid Ethereum address",
    // Go's strconv.Atoi: an optional sign, decimal digits, within int64; then it must be positive.
    chainId: (value) => /^[+-]?\d+$/.test(value) && BigInt(value) > 0n && BigInt(value) <= 9223372036854775807n,
    noStatement: null,
    zeroIssuedAtIsMissing: true
  },
  solana: {
    prefix: "siws",
    account: "Solana",
    address: /^[a-zA-Z0-9]{32,44}$/,
    addressError: "wallet address is not in base58 format",
    chainId: (value) => value === "" || /^solana:(main|dev|test|local)net$/.test(value),
    noStatement: "",
    zeroIssuedAtIsMissing: false
  }
}

const DOMAIN = /^(localhost|(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,})(?::\d{1,5})?$/

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|([+-])(\d{2}):(\d{2}))$/

/** Go's zero time.Time (0001-01-01T00:00:00Z), which GoTrue reads as "not specified". */
export const GO_ZERO_TIME = -62135596800000

const daysIn = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/** Go's time.Parse(time.RFC3339) (which also takes fractional seconds): epoch milliseconds, or undefined. */
export const parseRfc3339 = (value: string): number | undefined => {
  const m = RFC3339.exec(value)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined
  const offset = m[8] === undefined ? 0 : (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]))
  if (m[8] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, Number((m[7] ?? "0").padEnd(3, "0").slice(0, 3)))
  return date.getTime() - offset * 60_000
}

/**
 * Go's url.ParseRequestURI, as far as a message's URI and resources need it: an absolute path, or a scheme followed
 * by something a URL parser accepts.
 */
export const isRequestUri = (value: string): boolean =>
  !/[\x00-\x20\x7f]/.test(value) && (value.startsWith("/") || (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(value) && URL.canParse(value)))

/**
 * Parses a SIWE (chain "ethereum") or SIWS (chain "solana") message by GoTrue's grammar, which the two share:
 * lines split on "\n" only, a header naming the domain, the address, an empty line, an optional statement, then
 * `Key: value` fields. The error is GoTrue's text, `siwe: …` / `siws: …`.
 */
export const parseWeb3Message = (chain: Web3Chain, raw: string): Either.Either<Web3Message, string> => {
  const d = DIALECTS[chain]
  const fail = (text: string) => Either.left(`${d.prefix}: ${text}`)
  const lines = raw.split("\n")
  if (lines.length < 6) return fail("message needs at least 6 lines")
  const suffix = ` wants you to sign in with your ${d.account} account:`
  if (!lines[0]!.endsWith(suffix)) return fail(`message first line does not end in "${suffix}"`)
  const domain = lines[0]!.slice(0, -suffix.length).trim()
  if (!DOMAIN.test(domain)) return fail("domain in first line of message is not valid")
  const address = lines[1]!.trim()
  if (!d.address.test(address)) return fail(d.addressError)
  if (lines[2] !== "") return fail("third line must be empty")

  let statement = d.noStatement
  let start = 3
  if (lines[3] !== "" && lines[4] === "") {
    statement = lines[3]!
    start = 5
  }
  let uri: string | undefined
  let version = ""
  let chainId = ""
  let nonce = ""
  let issuedAt: number | undefined
  let expirationTime: number | undefined
  let notBefore: number | undefined
  let requestId: string | undefined
  const resources: Array<string> = []
  let inResources = false
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (inResources) {
      if (line.startsWith("- ")) {
        const resource = line.slice(2).trim()
        if (!isRequestUri(resource)) return fail(`Resource at position ${resources.length} has invalid URI`)
        resources.push(resource)
        continue
      }
      inResources = false
    }
    if (line === "Resources:") {
      inResources = true
      continue
    }
    if (line === "") continue
    const colon = line.indexOf(":")
    if (colon < 0) return fail(`encountered unparsable line at index ${i}`)
    const key = line.slice(0, colon)
    const value = line.slice(colon + 1).trim()
    switch (key) {
      case "URI":
        if (!isRequestUri(value)) return fail("URI is not valid")
        uri = value
        break
      case "Version":
        version = value
        break
      case "Chain ID":
        if (!d.chainId(value)) return fail("Chain ID is not valid")
        chainId = value
        break
      case "Nonce":
        nonce = value
        break
      case "Issued At": {
        const at = parseRfc3339(value)
        if (at === undefined) return fail("Issued At is not a valid ISO8601 timestamp")
        if (d.zeroIssuedAtIsMissing && at === GO_ZERO_TIME) return fail("Issued At is not specified")
        issuedAt = at
        break
      }
      case "Expiration Time": {
        const at = parseRfc3339(value)
        if (at === undefined) return fail("Expiration Time is not a valid ISO8601 timestamp")
        expirationTime = at
        break
      }
      case "Not Before": {
        const at = parseRfc3339(value)
        if (at === undefined) return fail("Not Before is not a valid ISO8601 timestamp")
        notBefore = at
        break
      }
      case "Request ID":
        requestId = value
        break
    }
  }
  if (version !== "1") return fail(`Version value is not supported, expected 1 got ${JSON.stringify(version)}`)
  if (issuedAt === undefined || issuedAt === GO_ZERO_TIME) return fail("Issued At is not specified")
  if (uri === undefined || uri === "") return fail("URI is not specified")
  // siws keeps a zero Expiration/Not Before as "absent" (its fields are not pointers).
  if (chain === "solana") {
    if (expirationTime === GO_ZERO_TIME) expirationTime = undefined
    if (notBefore === GO_ZERO_TIME) notBefore = undefined
  }
  if (expirationTime !== undefined && issuedAt > expirationTime) return fail("Issued At is after Expiration Time")
  if (notBefore !== undefined && expirationTime !== undefined && notBefore > expirationTime) {
    return fail("Not Before is after Expiration Time")
  }
  return Either.right({
    chain, raw, domain, address, statement, uri, version, chainId, nonce, issuedAt, expirationTime, notBefore, requestId, resources
  })
}
