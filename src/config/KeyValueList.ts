import * as Option from "effect/Option"

/**
 * OpenTelemetry's `key=value,key=value` lists (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS): pairs
 * separated by commas, each key and value trimmed and percent-decoded, so a value may hold `,` or `=` as %2C
 * or %3D. None when an entry has no `=`, an empty key, or a broken escape: a half-read list of headers would
 * send a collector credentials it does not expect, so the whole setting is refused instead.
 */
export const parseKeyValueList = (raw: string): Option.Option<Readonly<Record<string, string>>> => {
  const pairs: Record<string, string> = {}
  for (const entry of raw.split(",")) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    if (at < 0) return Option.none()
    const key = decode(entry.slice(0, at).trim())
    const value = decode(entry.slice(at + 1).trim())
    if (key === undefined || key === "" || value === undefined) return Option.none()
    pairs[key] = value
  }
  return Option.some(pairs)
}

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

