/**
 * The redirects the OAuth server builds back to a client, byte for byte as GoTrue builds them with Go's
 * `url.Values`: the redirect URI's own query is parsed again, the new parameters set (replacing any of the same
 * name), and the whole query written with its keys sorted and its values `QueryEscape`d.
 */

/**
 * Go's url.QueryEscape: what encodeURIComponent leaves alone but `!'()*` is escaped too, and a space is `+`
 * (`~` stays as it is, which URLSearchParams would escape).
 */
export const goQueryEscape = (value: string): string =>
  encodeURIComponent(value)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, "+")

/**
 * Go's url.QueryUnescape, which form decoding uses too (`+` a space), or undefined for a malformed escape: a query
 * here, a token request's form body and Basic credentials' halves in ClientCredentials and OAuthTokenRequest.
 */
export const goQueryUnescape = (value: string): string | undefined => {
  if (/%(?![0-9A-Fa-f]{2})/.test(value)) return undefined
  try {
    return decodeURIComponent(value.replace(/\+/g, " "))
  } catch {
    // Escapes that are not UTF-8: Go keeps the bytes; decoding them one by one keeps what can be kept.
    return unescape(value.replace(/\+/g, " "))
  }
}

/** Go's url.ParseQuery, keeping what it keeps: pairs split on `&`, those with `;` or a bad escape dropped. */
export const goParseQuery = (query: string): Map<string, Array<string>> => {
  const values = new Map<string, Array<string>>()
  for (const part of query.split("&")) {
    if (part === "" || part.includes(";")) continue
    const eq = part.indexOf("=")
    const key = goQueryUnescape(eq < 0 ? part : part.slice(0, eq))
    const value = goQueryUnescape(eq < 0 ? "" : part.slice(eq + 1))
    if (key === undefined || value === undefined) continue
    values.set(key, [...(values.get(key) ?? []), value])
  }
  return values
}

/** Go's url.Values.Encode: keys sorted (by UTF-8 bytes, as Go compares strings), each value escaped. */
export const goEncodeQuery = (values: ReadonlyMap<string, ReadonlyArray<string>>): string =>
  [...values.keys()]
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .flatMap((key) => values.get(key)!.map((value) => `${goQueryEscape(key)}=${goQueryEscape(value)}`))
    .join("&")

/**
 * The redirect URI with `params` set in its query (an empty value leaves the parameter out, as GoTrue's callers
 * do for an empty state). The URI is one the client registered: it has no fragment.
 */
export const redirectWith = (redirectUri: string, params: ReadonlyArray<readonly [string, string]>): string => {
  const hash = redirectUri.indexOf("#")
  const withoutFragment = hash < 0 ? redirectUri : redirectUri.slice(0, hash)
  const q = withoutFragment.indexOf("?")
  const base = q < 0 ? withoutFragment : withoutFragment.slice(0, q)
  const values = goParseQuery(q < 0 ? "" : withoutFragment.slice(q + 1))
  for (const [key, value] of params) if (value !== "") values.set(key, [value])
  const query = goEncodeQuery(values)
  return query === "" ? base : `${base}?${query}`
}

/** Where a successful authorization sends the client: the code, and the state when there was one. */
export const successRedirect = (redirectUri: string, code: string, state: string | null): string =>
  redirectWith(redirectUri, [["code", code], ["state", state ?? ""]])

/** Where a refused authorization sends the client: the OAuth error, its description, and the state. */
export const errorRedirect = (redirectUri: string, error: string, description: string, state: string | null): string =>
  redirectWith(redirectUri, [["error", error], ["error_description", description], ["state", state ?? ""]])
