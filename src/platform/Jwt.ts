/**
 * Compact JWS serialisation (RFC 7515 §7.1) for JWTs: the pure, key-free half of TokenSigner.
 * Used as a namespace: `import * as Jwt from "./Jwt.js"`.
 */
import * as Option from "effect/Option"

export interface Header {
  readonly alg: string
  readonly typ?: string
  readonly kid?: string
  readonly [parameter: string]: unknown
}

export interface Decoded {
  readonly header: Header
  readonly payload: Record<string, unknown>
  /** The exact bytes the signature covers: `base64url(header) "." base64url(payload)`. */
  readonly signingInput: Buffer
  readonly signature: Buffer
}

// Buffer's base64url decoder skips unknown characters, tolerates padding and ignores trailing bits,
// so many strings decode to the same bytes; only the canonical spelling of a segment is accepted.
const decodeSegment = (text: string): Option.Option<Buffer> => {
  const bytes = Buffer.from(text, "base64url")
  return bytes.toString("base64url") === text ? Option.some(bytes) : Option.none()
}

const parseObject = (bytes: Buffer): Option.Option<Record<string, unknown>> => {
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"))
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? Option.some(value as Record<string, unknown>)
      : Option.none()
  } catch {
    return Option.none()
  }
}

const isHeader = (value: Record<string, unknown>): value is Header =>
  typeof value["alg"] === "string" &&
  (value["kid"] === undefined || typeof value["kid"] === "string") &&
  (value["typ"] === undefined || typeof value["typ"] === "string") &&
  // No extension is understood here, so RFC 7515 §4.1.11 requires rejecting any "crit" (e.g. b64=false).
  value["crit"] === undefined

export const encodeSegment = (value: unknown): string =>
  Buffer.from(JSON.stringify(value), "utf8").toString("base64url")

/** Splits and parses a compact JWT; `None` for anything that is not three canonical segments with JSON objects. */
export const decode = (token: string): Option.Option<Decoded> => {
  const parts = token.split(".")
  if (parts.length !== 3) return Option.none()
  const [headerText, payloadText, signatureText] = parts as [string, string, string]
  return Option.all({
    header: Option.flatMap(decodeSegment(headerText), parseObject).pipe(Option.filter(isHeader)),
    payload: Option.flatMap(decodeSegment(payloadText), parseObject),
    signature: decodeSegment(signatureText)
  }).pipe(
    Option.map(({ header, payload, signature }) => ({
      header,
      payload,
      signingInput: Buffer.from(`${headerText}.${payloadText}`, "ascii"),
      signature
    }))
  )
}
