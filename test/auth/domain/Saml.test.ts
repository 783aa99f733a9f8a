import { describe, expect, it } from "@effect/vitest"
import { generateKeyPairSync, X509Certificate } from "node:crypto"
import { Either } from "effect"
import {
  assertionProblem,
  assertionReplayExpiry,
  CLOCK_SKEW_MS,
  identityTooLong,
  mapAttributes,
  MAX_ISSUE_DELAY_MS,
  readAssertion,
  samlEmail,
  samlIdentityData,
  samlUserId,
  type VerifiedAssertion
} from "../../../src/auth/domain/SamlAssertion.js"
import { selfSignedCertificate } from "../../../src/auth/domain/SamlCertificate.js"
import { durationMs, isMetadataStale, parseIdpMetadata, signOnProblem } from "../../../src/auth/domain/SamlIdpMetadata.js"
import { parseSamlPrivateKey } from "../../../src/domain/SamlKey.js"
import { ssoFieldTooLong } from "../../../src/auth/domain/SsoFieldLimit.js"
import { NAMEID_FORMAT, spMetadataXml } from "../../../src/auth/domain/SamlSpMetadata.js"
import { parseXml } from "../../../src/auth/sso/XmlParser.js"
import { acsErrorRedirect, acsSessionRedirect, samlUrls } from "../../../src/auth/domain/SamlUrls.js"

const MD = "urn:oasis:names:tc:SAML:2.0:metadata"
const idpMetadata = (body: string, attributes = `entityID="https://idp.example.org"`) =>
  `<md:EntityDescriptor xmlns:md="${MD}" ${attributes}>${body}</md:EntityDescriptor>`
const IDP = `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
  <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>
  QUJD
  </ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
  <md:KeyDescriptor use="encryption"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>RU5D</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
  <md:KeyDescriptor><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>REVG</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
  <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example.org/post"/>
  <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.org/redirect"/>
</md:IDPSSODescriptor>`

const assertion = (overrides: Partial<VerifiedAssertion> = {}): VerifiedAssertion => ({
  id: "_a1",
  issuer: "https://idp.example.org",
  issueInstant: new Date(1_000_000),
  nameId: "  Ada@Example.COM ",
  nameIdFormat: NAMEID_FORMAT.emailAddress,
  attributes: [],
  confirmations: [{ method: "urn:oasis:names:tc:SAML:2.0:cm:bearer", recipient: "https://sp.example/sso/saml/acs", notOnOrAfter: undefined }],
  conditionsNotOnOrAfter: undefined,
  sessionNotOnOrAfter: undefined,
  ...overrides
})
const attribute = (name: string, values: ReadonlyArray<string>, friendlyName = "") => ({ name, friendlyName, values })

describe("SAML URLs and redirects", () => {
  it("builds the SP's URLs under SAML_EXTERNAL_URL, with or without a trailing slash or a path", () => {
    expect(samlUrls("https://auth.example.com")).toStrictEqual({
      metadata: "https://auth.example.com/sso/saml/metadata",
      acs: "https://auth.example.com/sso/saml/acs",
      slo: "https://auth.example.com/sso/saml/slo"
    })
    expect(samlUrls("https://x.example/auth/v1/").acs).toBe("https://x.example/auth/v1/sso/saml/acs")
    expect(samlUrls("https://x.example/auth/v1").acs).toBe("https://x.example/auth/v1/sso/saml/acs")
  })

  it("maps an ACS error's status as GoTrue does: 404 and 422 are server_error, banned and signup refusals access_denied", () => {
    const at = (status: number, code = "x") => new URL(acsErrorRedirect("https://app.example/?keep=1", { status, code, message: "m" }))
    expect(at(400).searchParams.get("error")).toBe("invalid_request")
    expect(at(401).searchParams.get("error")).toBe("unauthorized_client")
    expect(at(403).searchParams.get("error")).toBe("access_denied")
    expect(at(404).searchParams.get("error")).toBe("server_error")
    expect(at(422).searchParams.get("error")).toBe("server_error")
    expect(at(422, "signup_disabled").searchParams.get("error")).toBe("access_denied")
    expect(at(400).searchParams.get("keep")).toBe("1")
    expect(at(400).hash).toBe("")
  })

  it("puts the session in the fragment with GoTrue's sorted keys and the sb marker", () => {
    expect(acsSessionRedirect("https://app.example/a#old", { access_token: "A", refresh_token: "R", expires_in: 3600, expires_at: 9, token_type: "bearer" }))
      .toBe("https://app.example/a#access_token=A&expires_at=9&expires_in=3600&refresh_token=R&token_type=bearer&sb=")
  })
})

describe("SP metadata", () => {
  it("has crewjam's shape: entity ID, signing certificate, SLO, NameIDFormats, one HTTP-POST ACS", () => {
    const xml = spMetadataXml({ urls: samlUrls("https://auth.example.com"), certificates: [Buffer.from("cert")], validUntil: new Date("2030-01-02T03:04:05.678Z") })
    expect(xml).toBe(
      `<EntityDescriptor xmlns="${MD}" validUntil="2030-01-02T03:04:05Z" entityID="https://auth.example.com/sso/saml/metadata">` +
        `<SPSSODescriptor xmlns="${MD}" validUntil="2030-01-02T03:04:05Z" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAssertionsSigned="true">` +
        `<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>Y2VydA==</X509Certificate></X509Data></KeyInfo></KeyDescriptor>` +
        `<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://auth.example.com/sso/saml/slo" ResponseLocation="https://auth.example.com/sso/saml/slo"></SingleLogoutService>` +
        `<NameIDFormat>${NAMEID_FORMAT.emailAddress}</NameIDFormat><NameIDFormat>${NAMEID_FORMAT.persistent}</NameIDFormat>` +
        `<AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://auth.example.com/sso/saml/acs" index="1"></AssertionConsumerService>` +
        `</SPSSODescriptor></EntityDescriptor>`
    )
    expect(spMetadataXml({ urls: samlUrls("https://a.example"), certificates: [], validUntil: new Date(0), cacheDuration: "PT1H" })).toContain(` cacheDuration="PT1H" `)
  })

  it("publishes a self-signed certificate of the SP key with GoTrue's subject, SAN and validity", () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const der = selfSignedCertificate(privateKey, {
      commonName: "SAML 2.0 Certificate for auth.example.com",
      notBefore: new Date(0),
      notAfter: new Date("2170-01-01T00:00:00Z"),
      dnsNames: ["_samlsp.auth.example.com"]
    })
    const certificate = new X509Certificate(der)
    expect(certificate.subject).toBe("CN=SAML 2.0 Certificate for auth.example.com")
    expect(certificate.issuer).toBe(certificate.subject)
    expect(certificate.subjectAltName).toBe("DNS:_samlsp.auth.example.com")
    expect(new Date(certificate.validFrom).getTime()).toBe(0)
    expect(certificate.verify(publicKey)).toBe(true)
    // Go's encodings: the CN a PrintableString (13 = its tag), KeyUsage bits with the unused ones counted.
    expect(der.includes(Buffer.from([0x13, 0x29, ...Buffer.from("SAML 2.0 Certificate for auth.example.com")]))).toBe(true)
    expect(der.includes(Buffer.from("040403020780", "hex"))).toBe(true)
    const both = selfSignedCertificate(privateKey, { commonName: "x", notBefore: new Date(0), notAfter: new Date(1), dataEncipherment: true })
    expect(both.includes(Buffer.from("040403020490", "hex"))).toBe(true)
  })
})

describe("SAML_PRIVATE_KEY", () => {
  const pkcs1 = (bits: number, publicExponent = 65537) =>
    generateKeyPairSync("rsa", { modulusLength: bits, publicExponent }).privateKey.export({ type: "pkcs1", format: "der" }).toString("base64")

  it("accepts a 2048-bit PKCS#1 key and refuses others with GoTrue's messages", () => {
    expect(typeof parseSamlPrivateKey(pkcs1(2048), "SAML private key")).not.toBe("string")
    expect(parseSamlPrivateKey("not base64!", "SAML private key")).toBe("SAML private key not in standard Base64 format")
    expect(parseSamlPrivateKey(Buffer.from("junk").toString("base64"), "SAML private key")).toBe("SAML private key not in PKCS#1 format")
    expect(parseSamlPrivateKey(pkcs1(1024), "SAML next private key")).toBe("SAML next private key must be at least RSA 2048")
    expect(parseSamlPrivateKey(pkcs1(2048, 3), "SAML private key")).toBe("SAML private key should use the 65537 (0x10001) RSA public exponent")
  })
})

describe("IdP metadata", () => {
  it("reads the entity ID, the HTTP-Redirect SSO URL and the signing certificates (use signing or none)", () => {
    const parsed = parseIdpMetadata(idpMetadata(IDP, `entityID="https://idp.example.org" validUntil="2031-01-01T00:00:00Z" cacheDuration="PT6H"`), parseXml)
    expect(parsed).toStrictEqual(Either.right({
      entityId: "https://idp.example.org",
      ssoRedirectUrl: "https://idp.example.org/redirect",
      signingCertificates: ["QUJD", "REVG"],
      validUntil: new Date("2031-01-01T00:00:00Z"),
      cacheDurationMs: 6 * 3_600_000
    }))
  })

  it("takes the first EntityDescriptor with an IDPSSODescriptor out of an EntitiesDescriptor", () => {
    const xml = `<md:EntitiesDescriptor xmlns:md="${MD}"><md:EntityDescriptor entityID="sp"><md:SPSSODescriptor protocolSupportEnumeration="x"/></md:EntityDescriptor>${
      idpMetadata(IDP, `entityID="idp2"`).replace(` xmlns:md="${MD}"`, "")
    }</md:EntitiesDescriptor>`
    expect(Either.map(parseIdpMetadata(xml, parseXml), (m) => m.entityId)).toStrictEqual(Either.right("idp2"))
  })

  it("refuses what GoTrue refuses, and XML that does not parse or declares a DOCTYPE", () => {
    const message = (xml: string | Buffer) => Either.match(parseIdpMetadata(xml, parseXml), { onLeft: (p) => p.message, onRight: () => "ok" })
    expect(message(idpMetadata(IDP, ""))).toBe("SAML Metadata does not contain an EntityID")
    expect(message(idpMetadata(""))).toBe("SAML Metadata does not contain any IDPSSODescriptor")
    expect(message(idpMetadata(IDP + IDP))).toBe("SAML Metadata contains multiple IDPSSODescriptors")
    expect(message(Buffer.from([0x3c, 0xff, 0xfe]))).toBe("SAML Metadata XML contains invalid UTF-8 characters, which are not supported at this time")
    expect(message("<not xml")).toBe("SAML Metadata XML is not valid")
    expect(message(`<!DOCTYPE x [<!ENTITY a "b">]>${idpMetadata(IDP)}`)).toBe("SAML Metadata XML must not contain a DOCTYPE")
    // XML 1.0 has no NUL, raw or referenced; xmldom would read the reference into the entity ID.
    expect(message(idpMetadata(IDP, `entityID="https://idp.example.org/&#0;"`))).toBe("SAML Metadata XML is not valid")
    expect(message(idpMetadata(IDP, `entityID="https://idp.example.org/&#x00;"`))).toBe("SAML Metadata XML is not valid")
    expect(message(idpMetadata(IDP, `entityID="https://idp.example.org/&#10;"`))).toBe("ok")
  })

  it("takes only an http or https HTTP-Redirect Location; a provider needs one", () => {
    const redirectOf = (location: string) =>
      Either.map(parseIdpMetadata(idpMetadata(IDP.replace("https://idp.example.org/redirect", location)), parseXml), (m) => m.ssoRedirectUrl)
    expect(redirectOf("http://idp.example.org/r")).toStrictEqual(Either.right("http://idp.example.org/r"))
    expect(redirectOf("javascript:alert(1)")).toStrictEqual(Either.right(undefined))
    expect(redirectOf("/relative")).toStrictEqual(Either.right(undefined))
    expect(redirectOf("")).toStrictEqual(Either.right(undefined))
    const postOnly = parseIdpMetadata(idpMetadata(IDP.replace(/<md:SingleSignOnService Binding="[^"]*HTTP-Redirect"[^>]*>/, "")), parseXml)
    expect(Either.map(postOnly, signOnProblem)).toStrictEqual(Either.right({
      _tag: "Invalid",
      message: "SAML Metadata does not contain any SingleSignOnService with the HTTP-Redirect binding and an http or https Location"
    }))
    expect(Either.map(parseIdpMetadata(idpMetadata(IDP), parseXml), signOnProblem)).toStrictEqual(Either.right(undefined))
  })

  it("is stale once validUntil passed, or cacheDuration elapsed since stored, or a day without either", () => {
    const stored = new Date("2030-01-01T00:00:00Z")
    const base = { entityId: "x", ssoRedirectUrl: undefined, signingCertificates: [] }
    const hours = (n: number) => new Date(stored.getTime() + n * 3_600_000)
    expect(isMetadataStale({ ...base, validUntil: undefined, cacheDurationMs: undefined }, stored, hours(23))).toBe(false)
    expect(isMetadataStale({ ...base, validUntil: undefined, cacheDurationMs: undefined }, stored, hours(24))).toBe(true)
    expect(isMetadataStale({ ...base, validUntil: hours(2), cacheDurationMs: undefined }, stored, hours(30))).toBe(true)
    expect(isMetadataStale({ ...base, validUntil: hours(100), cacheDurationMs: undefined }, stored, hours(30))).toBe(false)
    expect(isMetadataStale({ ...base, validUntil: undefined, cacheDurationMs: 3_600_000 }, stored, hours(1))).toBe(true)
    expect(durationMs("P1DT2H")).toBe(26 * 3_600_000)
    expect(durationMs("nonsense")).toBeUndefined()
  })
})

describe("SSO provider fields", () => {
  it("take up to 1024 UTF-8 bytes, which their unique indexes hold", () => {
    expect(ssoFieldTooLong("resource_id", "r".repeat(1024))).toBeUndefined()
    expect(ssoFieldTooLong("resource_id", "r".repeat(1025))).toBe("resource_id cannot exceed 1024 bytes")
    expect(ssoFieldTooLong("An SSO domain", "é".repeat(513))).toBe("An SSO domain cannot exceed 1024 bytes")
  })
})

describe("the verified assertion", () => {
  it("reads NameID whole across comments, attributes with FriendlyName, confirmations and the earliest session end", () => {
    const read = readAssertion(parseXml(`<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_x" IssueInstant="2030-01-01T00:00:00Z">
      <saml:Issuer> https://idp.example.org </saml:Issuer>
      <saml:Subject><saml:NameID Format="${NAMEID_FORMAT.persistent}">abc<!---->def</saml:NameID>
        <saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData Recipient="https://sp/acs" NotOnOrAfter="2030-01-01T00:05:00Z"/></saml:SubjectConfirmation></saml:Subject>
      <saml:Conditions NotOnOrAfter="2030-01-01T00:10:00Z"/>
      <saml:AuthnStatement SessionNotOnOrAfter="2030-01-02T00:00:00Z"/><saml:AuthnStatement SessionNotOnOrAfter="2030-01-01T12:00:00Z"/>
      <saml:AttributeStatement><saml:Attribute Name="urn:oid:1" FriendlyName="givenName"><saml:AttributeValue>Ada</saml:AttributeValue><saml:AttributeValue/></saml:Attribute></saml:AttributeStatement>
    </saml:Assertion>`))
    expect(read).toStrictEqual({
      id: "_x",
      issuer: "https://idp.example.org",
      issueInstant: new Date("2030-01-01T00:00:00Z"),
      nameId: "abcdef",
      nameIdFormat: NAMEID_FORMAT.persistent,
      attributes: [{ name: "urn:oid:1", friendlyName: "givenName", values: ["Ada", ""] }],
      confirmations: [{ method: "urn:oasis:names:tc:SAML:2.0:cm:bearer", recipient: "https://sp/acs", notOnOrAfter: new Date("2030-01-01T00:05:00Z") }],
      conditionsNotOnOrAfter: new Date("2030-01-01T00:10:00Z"),
      sessionNotOnOrAfter: new Date("2030-01-01T12:00:00Z")
    })
    expect(readAssertion(parseXml("<Response/>"))).toBeUndefined()
  })

  it("holds the Issuer, an unexpired bearer Recipient at this ACS and the 90 s issue delay", () => {
    const context = { idpEntityId: "https://idp.example.org", acsUrl: "https://sp.example/sso/saml/acs", now: 1_000_000 + MAX_ISSUE_DELAY_MS }
    expect(assertionProblem(assertion(), context)).toBeUndefined()
    expect(assertionProblem(assertion(), { ...context, now: context.now + 1 })).toBe("assertion IssueInstant is too old")
    expect(assertionProblem(assertion({ issuer: "https://evil" }), context)).toBe("assertion Issuer is not the provider's entity ID")
    expect(assertionProblem(assertion({ confirmations: [{ method: "urn:oasis:names:tc:SAML:2.0:cm:bearer", recipient: "https://evil/acs", notOnOrAfter: undefined }] }), context))
      .toBe("no bearer SubjectConfirmation with this ACS as Recipient")
    expect(assertionProblem(assertion({ issueInstant: new Date(context.now + CLOCK_SKEW_MS + 1) }), context)).toBe("assertion IssueInstant is in the future")
    const bearer = (notOnOrAfter: number) => ({ method: "urn:oasis:names:tc:SAML:2.0:cm:bearer", recipient: context.acsUrl, notOnOrAfter: new Date(notOnOrAfter) })
    expect(assertionProblem(assertion({ confirmations: [bearer(context.now - CLOCK_SKEW_MS)] }), context)).toBe("the bearer SubjectConfirmation has expired")
    expect(assertionProblem(assertion({ confirmations: [bearer(context.now - CLOCK_SKEW_MS + 1)] }), context)).toBeUndefined()
    expect(assertionProblem(assertion({ confirmations: [bearer(context.now - CLOCK_SKEW_MS), bearer(context.now)] }), context)).toBeUndefined()
  })

  it("finds the user id: subject-id attribute, else a non-transient NameID (emailAddress trimmed and lowercased)", () => {
    expect(samlUserId(assertion())).toBe("ada@example.com")
    expect(samlUserId(assertion({ nameIdFormat: NAMEID_FORMAT.transient }))).toBe("")
    expect(samlUserId(assertion({ nameIdFormat: NAMEID_FORMAT.persistent, nameId: "P-1" }))).toBe("P-1")
    expect(samlUserId(assertion({ attributes: [attribute("urn:oasis:names:tc:SAML:attribute:subject-id", ["sid@corp"])] }))).toBe("sid@corp")
  })

  it("finds the email: the usual attributes (Name or FriendlyName, any case), else an emailAddress NameID", () => {
    expect(samlEmail(assertion())).toBe("  Ada@Example.COM ")
    expect(samlEmail(assertion({ attributes: [attribute("urn:oid:x", ["", "m@corp"], "MAIL")] }))).toBe("m@corp")
    expect(samlEmail(assertion({ nameIdFormat: NAMEID_FORMAT.persistent }))).toBe("")
  })

  it("refuses an email longer than users.email holds and a user id longer than the identities index holds", () => {
    expect(identityTooLong("s".repeat(512), `${"e".repeat(245)}@corp.test`)).toBeUndefined()
    expect(identityTooLong("s", `${"e".repeat(246)}@corp.test`)).toBe("SAML Assertion email address is longer than 255 characters")
    expect(identityTooLong("s".repeat(513), "e@corp.test")).toBe("SAML Assertion user identifier is longer than 512 characters")
  })

  it("maps attributes by name then names, first non-empty value (all with array), else the default", () => {
    const a = assertion({ attributes: [attribute("first", ["", "Ada"]), attribute("groups", ["a", "", "b"], "memberOf")] })
    expect(mapAttributes(a, {
      keys: {
        given_name: { name: "missing", names: ["FIRST"] },
        groups: { name: "memberof", array: true },
        team: { name: "none", default: "core" },
        nothing: { name: "none" }
      }
    })).toStrictEqual({ given_name: "Ada", groups: ["a", "b"], team: "core" })
    expect(mapAttributes(a, {})).toStrictEqual({})
  })

  it("splits mapped claims into Claims fields and custom_claims, with iss, sub and a verified email", () => {
    expect(samlIdentityData({ name: "Ada", groups: ["a"], email: "ignored" }, { issuer: "https://idp", subject: "s", email: "ada@corp" }))
      .toStrictEqual(Either.right({
        iss: "https://idp", sub: "s", name: "Ada", email: "ada@corp", email_verified: true, phone_verified: false, custom_claims: { groups: ["a"] }
      }))
    expect(samlIdentityData({ name: ["Ada"] }, { issuer: "i", subject: "s", email: "e" })).toStrictEqual(Either.left("mapped claim name must be a string"))
  })

  it("remembers a used assertion until its latest bound passed, plus the skew", () => {
    expect(assertionReplayExpiry(assertion(), 0).getTime()).toBe(1_000_000 + MAX_ISSUE_DELAY_MS + CLOCK_SKEW_MS)
    const later = new Date(5_000_000)
    expect(assertionReplayExpiry(assertion({ conditionsNotOnOrAfter: new Date(2_000_000), confirmations: [{ method: "b", recipient: "r", notOnOrAfter: later }] }), 0))
      .toStrictEqual(new Date(later.getTime() + CLOCK_SKEW_MS))
  })
})
