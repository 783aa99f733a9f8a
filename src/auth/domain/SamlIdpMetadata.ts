import * as Either from "effect/Either"
import { childElements, descendantElements, type XmlParse } from "./XmlNode.js"

const MD = "urn:oasis:names:tc:SAML:2.0:metadata"
const DS = "http://www.w3.org/2000/09/xmldsig#"
export const HTTP_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"

/** What the SP needs of an IdP's metadata. */
export interface IdpMetadata {
  readonly entityId: string
  /** The IdP's HTTP-Redirect SingleSignOnService Location (an http or https URL), where AuthnRequests go. */
  readonly ssoRedirectUrl: string | undefined
  /** Base64 DER of every signing certificate (KeyDescriptor use="signing" or without use). */
  readonly signingCertificates: ReadonlyArray<string>
  readonly validUntil: Date | undefined
  /** cacheDuration in milliseconds, when set and readable. */
  readonly cacheDurationMs: number | undefined
}

/** Why metadata was refused: GoTrue's 400 texts, or XML that does not parse (GoTrue's 500; Gatehouse's 400 too). */
export type IdpMetadataProblem = { readonly _tag: "Invalid"; readonly message: string }

const invalid = (message: string): IdpMetadataProblem => ({ _tag: "Invalid", message })

const elements = childElements
const descendants = descendantElements

const ISO_DURATION = /^P(?:(\d+(?:\.\d+)?)Y)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/

/** An xs:duration in milliseconds (years as 365 days, months as 30), or undefined. */
export const durationMs = (value: string): number | undefined => {
  const match = ISO_DURATION.exec(value.trim())
  if (match === null || value.trim() === "P" || value.trim().endsWith("T")) return undefined
  const [years, months, weeks, days, hours, minutes, seconds] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number, number]
  return ((((years * 365 + months * 30 + weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000
}

const dateOf = (value: string | null): Date | undefined => {
  if (value === null || value === "") return undefined
  const at = new Date(value)
  return Number.isNaN(at.getTime()) ? undefined : at
}

/** A Location the browser can be sent to: an absolute http or https URL (never javascript: or a relative path). */
const webUrl = (value: string | null): string | undefined => {
  if (value === null) return undefined
  try {
    const url = new URL(value)
    return url.protocol === "https:" || url.protocol === "http:" ? value : undefined
  } catch {
    return undefined
  }
}

const isUtf8 = (bytes: Buffer): boolean => {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

/**
 * An IdP's metadata (an EntityDescriptor, or the first EntityDescriptor of an EntitiesDescriptor that has an
 * IDPSSODescriptor), with GoTrue's refusals. No DOCTYPE (entities are an XML bomb's way in); signatures on the
 * metadata itself are not checked (the admin who uploads it is trusted, as in GoTrue).
 */
export const parseIdpMetadata = (xml: string | Buffer, parseXml: XmlParse): Either.Either<IdpMetadata, IdpMetadataProblem> => {
  const bytes = typeof xml === "string" ? Buffer.from(xml, "utf8") : xml
  if (!isUtf8(bytes)) return Either.left(invalid("SAML Metadata XML contains invalid UTF-8 characters, which are not supported at this time"))
  const text = bytes.toString("utf8")
  if (/<!DOCTYPE/i.test(text)) return Either.left(invalid("SAML Metadata XML must not contain a DOCTYPE"))
  const root = parseXml(text)
  if (root === undefined || root.namespaceURI !== MD) return Either.left(invalid("SAML Metadata XML is not valid"))
  let entity = root
  if (root.localName === "EntitiesDescriptor") {
    const found = descendants(root, MD, "EntityDescriptor").find((candidate) => elements(candidate, MD, "IDPSSODescriptor").length > 0)
    if (found === undefined) return Either.left(invalid("SAML Metadata does not contain any IDPSSODescriptor"))
    entity = found
  } else if (root.localName !== "EntityDescriptor") {
    return Either.left(invalid("SAML Metadata XML is not valid"))
  }
  const entityId = entity.getAttribute("entityID") ?? ""
  if (entityId === "") return Either.left(invalid("SAML Metadata does not contain an EntityID"))
  const idps = elements(entity, MD, "IDPSSODescriptor")
  if (idps.length === 0) return Either.left(invalid("SAML Metadata does not contain any IDPSSODescriptor"))
  if (idps.length > 1) return Either.left(invalid("SAML Metadata contains multiple IDPSSODescriptors"))
  const idp = idps[0]!
  const redirect = elements(idp, MD, "SingleSignOnService").find((service) => service.getAttribute("Binding") === HTTP_REDIRECT)
  const signingCertificates = elements(idp, MD, "KeyDescriptor")
    .filter((key) => {
      const use = key.getAttribute("use") ?? ""
      return use === "" || use === "signing"
    })
    .flatMap((key) => descendants(key, DS, "X509Certificate"))
    .map((certificate) => (certificate.textContent ?? "").replace(/\s+/g, ""))
    .filter((certificate) => certificate !== "")
  const cache = entity.getAttribute("cacheDuration")
  return Either.right({
    entityId,
    ssoRedirectUrl: webUrl(redirect?.getAttribute("Location") ?? null),
    signingCertificates,
    validUntil: dateOf(entity.getAttribute("validUntil")),
    cacheDurationMs: cache === null || cache === "" ? undefined : durationMs(cache)
  })
}

/**
 * Metadata a provider can be created with, or refreshed to: GoTrue takes metadata without an HTTP-Redirect
 * SingleSignOnService and then hands POST /sso a URL without a host; Gatehouse refuses it up front.
 */
export const signOnProblem = (metadata: IdpMetadata): IdpMetadataProblem | undefined =>
  metadata.ssoRedirectUrl === undefined
    ? invalid("SAML Metadata does not contain any SingleSignOnService with the HTTP-Redirect binding and an http or https Location")
    : undefined

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * GoTrue's rule for metadata fetched from metadata_url: stale once validUntil passed, or cacheDuration elapsed since
 * it was stored (`updatedAt`), or, with neither, a day after.
 */
export const isMetadataStale = (metadata: IdpMetadata, updatedAt: Date, now: Date): boolean => {
  if (metadata.validUntil !== undefined && metadata.validUntil.getTime() <= now.getTime()) return true
  if (metadata.cacheDurationMs !== undefined) return updatedAt.getTime() + metadata.cacheDurationMs <= now.getTime()
  if (metadata.validUntil !== undefined) return false
  return updatedAt.getTime() + DAY_MS <= now.getTime()
}
