import * as Duration from "effect/Duration"
import type { RedirectAllowList } from "../../domain/RedirectAllowList.js"
import { allowedRedirect } from "./RedirectTo.js"
import type { Web3Message } from "./Web3Message.js"

export interface Web3Policy {
  readonly siteUrl: string
  readonly allowList: RedirectAllowList
  /** How far Issued At may lie from now, either way (EXTERNAL_WEB3_<CHAIN>_MAXIMUM_VALIDITY_DURATION). */
  readonly maximumValidity: Duration.Duration
}

/** The chain's name as GoTrue's messages spell it. */
export const chainName = (chain: Web3Message["chain"]): string => chain === "ethereum" ? "Ethereum" : "Solana"

/** The URI's scheme, host as written (host[:port], Go's URL.Host) and hostname, without a URL parser's normalising. */
const authorityOf = (uri: string): { scheme: string; host: string; hostname: string } => {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1] ?? ""
  const rest = uri.slice(scheme === "" ? 0 : scheme.length + 1)
  if (!rest.startsWith("//")) return { scheme, host: "", hostname: "" }
  const authority = rest.slice(2).split(/[/?#]/, 1)[0]!
  const host = authority.slice(authority.lastIndexOf("@") + 1)
  const hostname = host.startsWith("[") ? host.slice(1, host.indexOf("]") < 0 ? undefined : host.indexOf("]"))
    : host.replace(/:\d*$/, "")
  return { scheme, host, hostname }
}

/**
 * What GoTrue checks of a message whose signature verified (web3.go, in its order), with its texts: the URI is https
 * (or on localhost), allowed by SITE_URL / URI_ALLOW_LIST, the Domain is the URI's host and allowed too, and now is
 * within Not Before … Expiration Time and within the maximum validity of Issued At. Stronger than GoTrue: an
 * Ethereum message's Expiration Time is enforced on its own (GoTrue only when Not Before is present as well).
 * Bounds are inclusive as Go's After/Before make them. Returns the refusal's text, or undefined when it passes.
 */
export const checkWeb3Message = (message: Web3Message, now: number, policy: Web3Policy): string | undefined => {
  const name = chainName(message.chain)
  const allowed = (url: string) => allowedRedirect(url, policy.siteUrl, policy.allowList) !== undefined
  const { host, hostname, scheme } = authorityOf(message.uri)
  if (scheme !== "https" && hostname !== "localhost") return `Signed ${name} message is using URI which does not use HTTPS`
  if (!allowed(message.uri)) {
    return `Signed ${name} message is using URI which is not allowed on this server, message was signed for another app`
  }
  if (hostname !== "localhost" && (host !== message.domain || !allowed(`https://${message.domain}/`))) {
    return `Signed ${name} message is using a Domain that does not match the one in URI which is not allowed on this server`
  }
  if (message.notBefore !== undefined && now < message.notBefore) return `Signed ${name} message becomes valid in the future`
  if (message.expirationTime !== undefined && now > message.expirationTime) return `Signed ${name} message is expired`
  const validity = Duration.toMillis(policy.maximumValidity)
  if (now > message.issuedAt + validity) return `${name} message was issued too long ago`
  if (now < message.issuedAt - validity) return `${name} message was issued too far in the future`
  return undefined
}

/**
 * Until when a message could still pass checkWeb3Message: the end of its Issued At window, or its Expiration Time
 * when that comes first. Its used-message record is kept until then.
 */
export const web3MessageValidUntil = (message: Web3Message, maximumValidity: Duration.Duration): number => {
  const end = message.issuedAt + Duration.toMillis(maximumValidity)
  return message.expirationTime === undefined ? end : Math.min(end, message.expirationTime)
}
