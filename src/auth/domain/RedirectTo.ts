/**
 * Where an emailed link may send the user afterwards: the requested URL when it shares scheme, host and port with
 * SITE_URL (any port for loopback hosts, RFC 8252), otherwise SITE_URL. URI_ALLOW_LIST globs are the
 * redirect-validation work's; until then a URL outside SITE_URL's origin is replaced, never trusted.
 */
export const chooseRedirect = (requested: string | undefined, siteUrl: string): string => {
  if (requested === undefined || requested === "") return siteUrl
  try {
    const wanted = new URL(requested)
    const site = new URL(siteUrl)
    const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(wanted.hostname)
    const sameOrigin = wanted.protocol === site.protocol && wanted.hostname === site.hostname &&
      (loopback || wanted.port === site.port)
    return sameOrigin ? wanted.toString() : siteUrl
  } catch {
    return siteUrl
  }
}
