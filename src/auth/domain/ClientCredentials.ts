import { timingSafeEqual, createHash } from "node:crypto"
import { goQueryUnescape } from "./OAuthRedirect.js"

/** How a client authenticated at /oauth/token (RFC 7591's names). */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post" | "none"

export interface PresentedCredentials {
  readonly clientId: string
  readonly clientSecret: string
  readonly method: ClientAuthMethod
}

const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * HTTP Basic client credentials (RFC 6749 §2.3.1): standard base64 of `id:secret`, each half form-url-encoded by the
 * client. GoTrue reads the halves without decoding them, so a client that encodes as the RFC says (oauth4webapi
 * turns `-` into `%2D`) fails there; Gatehouse decodes. Ids and secrets GoTrue makes are `[A-Za-z0-9_-]`, which
 * decoding leaves as they are, so raw senders authenticate as before. The problem is GoTrue's message.
 */
export const parseBasicCredentials = (header: string): { readonly id: string; readonly secret: string } | { readonly problem: string } => {
  const encoded = header.slice("Basic ".length)
  if (!STD_BASE64.test(encoded)) return { problem: "invalid basic auth encoding" }
  const decoded = Buffer.from(encoded, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return { problem: "invalid basic auth format" }
  const id = goQueryUnescape(decoded.slice(0, colon))
  const secret = goQueryUnescape(decoded.slice(colon + 1))
  if (id === undefined || secret === undefined) return { problem: "invalid basic auth encoding" }
  return { id, secret }
}

/** GoTrue's client_secret_hash: base64url without padding of the secret's SHA-256. */
export const hashClientSecret = (secret: string): string => createHash("sha256").update(secret).digest("base64url")

/** Whether `secret` is the one `storedHash` was made from, compared in constant time. */
export const clientSecretMatches = (secret: string, storedHash: string | null): boolean => {
  if (storedHash === null) return false
  const stored = Buffer.from(storedHash, "base64url")
  const presented = createHash("sha256").update(secret).digest()
  return stored.length === presented.length && timingSafeEqual(stored, presented)
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Why a presented client fails authentication against its registration (GoTrue's messages), or undefined. */
export const clientAuthProblem = (
  client: { readonly client_type: string; readonly token_endpoint_auth_method: string; readonly client_secret_hash: string | null },
  presented: PresentedCredentials
): string | undefined => {
  if (presented.method !== client.token_endpoint_auth_method) {
    return `invalid authentication method: client is registered for '${client.token_endpoint_auth_method}' but '${presented.method}' was used`
  }
  if (client.client_type === "public") return presented.clientSecret === "" ? undefined : "public clients must not provide client_secret"
  if (presented.clientSecret === "") return "confidential clients must provide client_secret"
  return clientSecretMatches(presented.clientSecret, client.client_secret_hash) ? undefined : "invalid client credentials"
}
