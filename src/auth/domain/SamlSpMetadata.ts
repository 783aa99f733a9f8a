import type { SamlUrls } from "./SamlUrls.js"

export const NAMEID_FORMAT = {
  persistent: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  emailAddress: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  transient: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
  unspecified: "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"
} as const

/** crewjam's encryption methods for an SP's encryption key. */
const ENCRYPTION_METHODS = [
  "http://www.w3.org/2001/04/xmlenc#aes128-cbc",
  "http://www.w3.org/2001/04/xmlenc#aes192-cbc",
  "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
  "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"
]

const escape = (value: string): string =>
  value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** RFC 3339 with seconds, as Go's encoding/xml writes a time.Time (crewjam's metadata). */
const timestamp = (at: Date): string => `${at.toISOString().slice(0, 19)}Z`

export interface SpMetadataInput {
  readonly urls: SamlUrls
  /** DER of each certificate, current first. */
  readonly certificates: ReadonlyArray<Uint8Array>
  /** SAML_ALLOW_ENCRYPTED_ASSERTIONS: each certificate is offered for encryption too. */
  readonly encryption?: boolean
  readonly validUntil: Date
  /** Set while a next key exists (GoTrue: PT1H). */
  readonly cacheDuration?: string
}

/**
 * The SP's metadata document, in the shape crewjam/saml writes it after GoTrue's edits: WantAssertionsSigned,
 * signing KeyDescriptors, SingleLogoutService, NameIDFormats emailAddress and persistent, one HTTP-POST ACS.
 * (GoTrue also lists an HTTP-Artifact ACS; Gatehouse does not accept artifacts, so it does not offer one.)
 */
export const spMetadataXml = (input: SpMetadataInput): string => {
  const validUntil = timestamp(input.validUntil)
  const cache = input.cacheDuration === undefined ? "" : ` cacheDuration="${input.cacheDuration}"`
  const keyInfo = (der: Uint8Array) =>
    `<KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${Buffer.from(der).toString("base64")}</X509Certificate></X509Data></KeyInfo>`
  const keys = input.certificates.map((der) =>
    `<KeyDescriptor use="signing">${keyInfo(der)}</KeyDescriptor>` +
    (input.encryption === true
      ? `<KeyDescriptor use="encryption">${keyInfo(der)}${ENCRYPTION_METHODS.map((algorithm) => `<EncryptionMethod Algorithm="${algorithm}"></EncryptionMethod>`).join("")}</KeyDescriptor>`
      : "")
  ).join("")
  return `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" validUntil="${validUntil}"${cache} entityID="${escape(input.urls.metadata)}">` +
    `<SPSSODescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" validUntil="${validUntil}" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAssertionsSigned="true">` +
    keys +
    `<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escape(input.urls.slo)}" ResponseLocation="${escape(input.urls.slo)}"></SingleLogoutService>` +
    `<NameIDFormat>${NAMEID_FORMAT.emailAddress}</NameIDFormat>` +
    `<NameIDFormat>${NAMEID_FORMAT.persistent}</NameIDFormat>` +
    `<AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escape(input.urls.acs)}" index="1"></AssertionConsumerService>` +
    `</SPSSODescriptor></EntityDescriptor>`
}
