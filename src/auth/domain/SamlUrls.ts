/** The SP's URLs, as GoTrue builds them: SAML_EXTERNAL_URL (else API_EXTERNAL_URL), a `/` ensured, then `sso/…`. */
export interface SamlUrls {
  /** The SP's entity ID, which is also where its metadata is served. */
  readonly metadata: string
  readonly acs: string
  /** Advertised in the metadata; not served (as in GoTrue). */
  readonly slo: string
}

export const samlUrls = (externalUrl: string): SamlUrls => {
  const base = new URL("sso/", externalUrl.endsWith("/") ? externalUrl : `${externalUrl}/`)
  return {
    metadata: new URL("saml/metadata", base).href,
    acs: new URL("saml/acs", base).href,
    slo: new URL("saml/slo", base).href
  }
}
