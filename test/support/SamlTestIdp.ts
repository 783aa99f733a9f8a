/**
 * A SAML 2.0 identity provider in the test process: its own RSA key and self-signed certificate, metadata that
 * publishes them with an HTTP-Redirect SingleSignOnService, a reader of the AuthnRequest Gatehouse redirects to
 * it, and Responses built from a template and signed with xml-crypto 6 (rsa-sha256, exc-c14n, enveloped) on the
 * Assertion, the Response, or both. Every knob a refusal test needs: times, audience, recipient, destination,
 * issuer, InResponseTo, NameID, attributes, the signing key, and edits after signing.
 */
import { generateKeyPairSync, type KeyObject, randomBytes, X509Certificate } from "node:crypto"
import { createRequire } from "node:module"
import { inflateRawSync } from "node:zlib"
import { SignedXml } from "xml-crypto"
import { selfSignedCertificate } from "../../src/auth/domain/SamlCertificate.js"

/** xml-encryption (node-saml's own decrypter), loaded untyped: it ships no declarations. */
const xmlenc = createRequire(import.meta.url)("xml-encryption") as {
  encrypt(content: string, options: Record<string, string>, callback: (error: Error | null, result: string) => void): void
}

const RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
const EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
const ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
const SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"

export const EMAIL_FORMAT = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
export const PERSISTENT_FORMAT = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent"

const escape = (value: string): string =>
  value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const iso = (at: Date): string => at.toISOString()

export interface Signer {
  readonly key: KeyObject
  readonly pem: string
  readonly certificate: string
}

export const newSigner = (): Signer => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const der = selfSignedCertificate(privateKey, {
    commonName: "Test IdP",
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 10 * 365 * 86_400_000)
  })
  return { key: privateKey, pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), certificate: der.toString("base64") }
}

/** An RSA key as SAML_PRIVATE_KEY takes it: standard Base64 of PKCS#1 DER. */
export const spPrivateKeySetting = (): string => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  return privateKey.export({ type: "pkcs1", format: "der" }).toString("base64")
}

export interface AuthnRequestSeen {
  readonly id: string
  readonly acsUrl: string
  readonly issuer: string
  readonly relayState: string
  readonly destination: string
  readonly nameIdFormat: string
  readonly url: URL
}

export interface ResponseOptions {
  /** The AuthnRequest answered (its ID as InResponseTo, its ACS as Recipient/Destination); absent: IdP-initiated. */
  readonly request?: { readonly id: string; readonly acsUrl: string }
  readonly acsUrl?: string
  readonly audience?: string | null
  readonly nameId?: string
  readonly nameIdFormat?: string
  readonly attributes?: Record<string, ReadonlyArray<string>>
  readonly issueInstant?: Date
  readonly notBefore?: Date
  readonly notOnOrAfter?: Date
  readonly subjectNotOnOrAfter?: Date
  readonly sessionNotOnOrAfter?: Date
  readonly recipient?: string
  readonly destination?: string | null
  readonly issuer?: string
  readonly inResponseTo?: string | null
  readonly assertionId?: string
  /** What is signed: the Assertion (default), the Response, both, or nothing. */
  readonly sign?: "assertion" | "response" | "both" | "none"
  /** Another key than the IdP's published one. */
  readonly signer?: Signer
}

export class SamlTestIdp {
  readonly signer = newSigner()
  constructor(readonly entityId: string, readonly ssoUrl: string) {}

  metadata(): string {
    return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${escape(this.entityId)}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="false">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${this.signer.certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>${EMAIL_FORMAT}</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escape(this.ssoUrl)}"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escape(this.ssoUrl)}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`
  }

  /** Reads the AuthnRequest of a redirect URL Gatehouse handed out (HTTP-Redirect binding: deflate + base64). */
  readRequest(location: string): AuthnRequestSeen {
    const url = new URL(location)
    const xml = inflateRawSync(Buffer.from(url.searchParams.get("SAMLRequest") ?? "", "base64")).toString("utf8")
    const attribute = (name: string) => new RegExp(`<(?:samlp:)?AuthnRequest[^>]*\\s${name}="([^"]*)"`).exec(xml)?.[1] ?? ""
    return {
      id: attribute("ID"),
      acsUrl: attribute("AssertionConsumerServiceURL"),
      destination: attribute("Destination"),
      issuer: /<(?:saml:)?Issuer[^>]*>([^<]*)</.exec(xml)?.[1] ?? "",
      nameIdFormat: /NameIDPolicy[^>]*Format="([^"]*)"/.exec(xml)?.[1] ?? "",
      relayState: url.searchParams.get("RelayState") ?? "",
      url
    }
  }

  /** The Assertion element, unsigned. */
  assertionXml(options: ResponseOptions & { readonly spEntityId: string }): string {
    const now = Date.now()
    const issued = options.issueInstant ?? new Date(now)
    const acs = options.acsUrl ?? options.request?.acsUrl ?? ""
    const inResponseTo = options.inResponseTo === undefined ? options.request?.id : options.inResponseTo
    const audience = options.audience === undefined ? options.spEntityId : options.audience
    const attributes = Object.entries(options.attributes ?? {}).map(([name, values]) =>
      `<saml:Attribute Name="${escape(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${
        values.map((value) => `<saml:AttributeValue xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="xs:string">${escape(value)}</saml:AttributeValue>`).join("")
      }</saml:Attribute>`
    ).join("")
    return `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${options.assertionId ?? `_a${randomBytes(16).toString("hex")}`}" Version="2.0" IssueInstant="${iso(issued)}">` +
      `<saml:Issuer>${escape(options.issuer ?? this.entityId)}</saml:Issuer>` +
      `<saml:Subject><saml:NameID Format="${options.nameIdFormat ?? EMAIL_FORMAT}">${escape(options.nameId ?? "user@example.com")}</saml:NameID>` +
      `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData ${
        inResponseTo === null || inResponseTo === undefined ? "" : `InResponseTo="${inResponseTo}" `
      }NotOnOrAfter="${iso(options.subjectNotOnOrAfter ?? new Date(now + 5 * 60_000))}" Recipient="${escape(options.recipient ?? acs)}"/></saml:SubjectConfirmation></saml:Subject>` +
      `<saml:Conditions NotBefore="${iso(options.notBefore ?? new Date(now - 60_000))}" NotOnOrAfter="${iso(options.notOnOrAfter ?? new Date(now + 5 * 60_000))}">` +
      (audience === null ? "" : `<saml:AudienceRestriction><saml:Audience>${escape(audience)}</saml:Audience></saml:AudienceRestriction>`) +
      `</saml:Conditions>` +
      `<saml:AuthnStatement AuthnInstant="${iso(issued)}" SessionIndex="_s${randomBytes(8).toString("hex")}"${
        options.sessionNotOnOrAfter === undefined ? "" : ` SessionNotOnOrAfter="${iso(options.sessionNotOnOrAfter)}"`
      }><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
      (attributes === "" ? "" : `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>`) +
      `</saml:Assertion>`
  }

  /** Signs the element `xpath` selects (enveloped, placed after its Issuer). */
  sign(xml: string, xpath: string, signer: Signer = this.signer): string {
    const signature = new SignedXml({
      privateKey: signer.pem,
      publicCert: `-----BEGIN CERTIFICATE-----\n${signer.certificate}\n-----END CERTIFICATE-----`,
      signatureAlgorithm: RSA_SHA256,
      canonicalizationAlgorithm: EXC_C14N
    })
    signature.addReference({ xpath, transforms: [ENVELOPED, EXC_C14N], digestAlgorithm: SHA256 })
    signature.computeSignature(xml, { location: { reference: `${xpath}/*[local-name(.)='Issuer']`, action: "after" } })
    return signature.getSignedXml()
  }

  /** A Response around the assertion (already signed or not), optionally signed itself: its XML. */
  responseXml(options: ResponseOptions & { readonly spEntityId: string }, assertion?: string): string {
    const sign = options.sign ?? "assertion"
    const signer = options.signer ?? this.signer
    let inner = assertion ?? this.assertionXml(options)
    if (assertion === undefined && (sign === "assertion" || sign === "both")) {
      inner = this.sign(inner, "//*[local-name(.)='Assertion']", signer)
    }
    const acs = options.acsUrl ?? options.request?.acsUrl ?? ""
    const destination = options.destination === undefined ? acs : options.destination
    const inResponseTo = options.inResponseTo === undefined ? options.request?.id : options.inResponseTo
    const response = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomBytes(16).toString("hex")}" Version="2.0" IssueInstant="${iso(options.issueInstant ?? new Date())}"` +
      (destination === null ? "" : ` Destination="${escape(destination)}"`) +
      (inResponseTo === null || inResponseTo === undefined ? "" : ` InResponseTo="${inResponseTo}"`) + `>` +
      `<saml:Issuer>${escape(options.issuer ?? this.entityId)}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
      inner + `</samlp:Response>`
    return sign === "response" || sign === "both" ? this.sign(response, "/*[local-name(.)='Response']", signer) : response
  }

  /**
   * A Response whose signed Assertion is encrypted (AES-256-CBC, key wrapped with RSA-OAEP) for the SP certificate
   * given (base64 DER, as its metadata publishes it): the base64 SAMLResponse.
   */
  async encryptedResponse(options: ResponseOptions & { readonly spEntityId: string }, spCertificate: string): Promise<string> {
    const signed = this.sign(this.assertionXml(options), "//*[local-name(.)='Assertion']")
    const certificate = new X509Certificate(Buffer.from(spCertificate, "base64"))
    const encrypted = await new Promise<string>((resolve, reject) =>
      xmlenc.encrypt(signed, {
        rsa_pub: certificate.publicKey.export({ type: "spki", format: "pem" }).toString(),
        pem: certificate.toString(),
        encryptionAlgorithm: "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
        keyEncryptionAlgorithm: "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"
      }, (error, result) => error === null ? resolve(result) : reject(error)))
    const xml = this.responseXml({ ...options, sign: "none" }, `<saml:EncryptedAssertion>${encrypted}</saml:EncryptedAssertion>`)
    return Buffer.from(xml, "utf8").toString("base64")
  }

  /** The base64 SAMLResponse an IdP posts. */
  response(options: ResponseOptions & { readonly spEntityId: string }): string {
    return Buffer.from(this.responseXml(options), "utf8").toString("base64")
  }
}
