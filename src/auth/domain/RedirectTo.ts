import { isAllowedRedirect, type RedirectAllowList } from "../../domain/RedirectAllowList.js"
import { parseRedirectUrl, type RedirectUrl } from "../../domain/RedirectUrl.js"

/**
 * Where an emailed link may send the user afterwards: the requested URL, normalised, when it shares scheme, host
 * and port with SITE_URL (any port for loopback hosts, RFC 8252) or matches an URI_ALLOW_LIST entry; otherwise
 * SITE_URL. Anything that does not parse cleanly (see parseRedirectUrl) is never trusted.
 */
export const chooseRedirect = (requested: string | undefined, siteUrl: string, allowList: RedirectAllowList): string =>
  allowedRedirect(requested, siteUrl, allowList) ?? siteUrl

/** The requested URL, normalised, when chooseRedirect would honour it; undefined when it would fall back. */
export const allowedRedirect = (requested: string | undefined, siteUrl: string, allowList: RedirectAllowList): string | undefined => {
  const wanted = requested === undefined ? undefined : parseRedirectUrl(requested)
  return wanted !== undefined && (onSite(wanted, siteUrl) || isAllowedRedirect(wanted, allowList)) ? wanted.href : undefined
}

const onSite = (wanted: RedirectUrl, siteUrl: string): boolean => {
  if (!URL.canParse(siteUrl)) return false
  const site = new URL(siteUrl)
  return wanted.scheme === site.protocol.slice(0, -1) && wanted.host === site.hostname.toLowerCase() &&
    (wanted.loopback || wanted.port === site.port)
}
