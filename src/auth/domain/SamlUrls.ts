/** The SP's URLs, as GoTrue builds them: SAML_EXTERNAL_URL (else API_EXTERNAL_URL), a `/` ensured, then `sso/…`. */
export interface SamlUrls {
  /** The SP's entity ID, which is also where its metadata is served. */
  readonly metadata: string
  readonly acs: string
  /** Advertised in the metadata; not served (as in GoTrue). */
  readonly slo: string
}

export const samlUrls = (externalUrl: string): SamlUrls => {
  let base: URL
  try {
    base = new URL("sso/", externalUrl.endsWith("/") ? externalUrl : `${externalUrl}/`)
  } catch {
    // Only when SAML is off can the URL be unset (API_EXTERNAL_URL may be empty): nothing is served then.
    base = new URL("http://localhost/sso/")
  }
  return {
    metadata: new URL("saml/metadata", base).href,
    acs: new URL("saml/acs", base).href,
    slo: new URL("saml/slo", base).href
  }
}

/** GoTrue's error for a status at the ACS: 400, 401, 403 and 503 by name, every other status server_error. */
const ACS_ERRORS: Readonly<Record<number, string>> = {
  400: "invalid_request",
  401: "unauthorized_client",
  403: "access_denied",
  503: "temporarily_unavailable"
}

/** A refused ACS post: SITE_URL with `error`, `error_code` and `error_description` in its query. */
export const acsErrorRedirect = (siteUrl: string, error: { readonly status: number; readonly code: string; readonly message: string }): string => {
  const target = new URL(siteUrl)
  const code = ["signup_disabled", "user_banned", "provider_email_needs_verification"].includes(error.code)
    ? "access_denied"
    : ACS_ERRORS[error.status] ?? "server_error"
  target.searchParams.set("error", code)
  target.searchParams.set("error_code", error.code)
  target.searchParams.set("error_description", error.message)
  return target.href
}

/** The implicit flow's success at the ACS: the session in the fragment, GoTrue's keys sorted, then an empty `sb`. */
export const acsSessionRedirect = (target: string, session: {
  readonly access_token: string
  readonly refresh_token: string
  readonly expires_in: number
  readonly expires_at: number
  readonly token_type: string
}): string => {
  const url = new URL(target)
  url.hash = ""
  const values = new URLSearchParams([
    ["access_token", session.access_token],
    ["expires_at", String(session.expires_at)],
    ["expires_in", String(session.expires_in)],
    ["refresh_token", session.refresh_token],
    ["token_type", session.token_type]
  ])
  return `${url.href}#${values.toString()}&sb=`
}
