import { type KeyObject } from "node:crypto"
import { createRequire } from "node:module"
import type * as NodeSaml from "@node-saml/node-saml"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { assertionProblem, readAssertion, type VerifiedAssertion } from "../domain/SamlAssertion.js"
import type { IdpMetadata } from "../domain/SamlIdpMetadata.js"
import { NAMEID_FORMAT } from "../domain/SamlSpMetadata.js"
import type { SamlUrls } from "../domain/SamlUrls.js"
import { childElements } from "../domain/XmlNode.js"
import { parseXml } from "./XmlParser.js"

const PROTOCOL = "urn:oasis:names:tc:SAML:2.0:protocol"
const ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion"

const pemCertificate = (base64: string): string =>
  `-----BEGIN CERTIFICATE-----\n${base64.match(/.{1,64}/g)?.join("\n") ?? ""}\n-----END CERTIFICATE-----`

export interface SpKeys {
  readonly urls: SamlUrls
  readonly privateKey: KeyObject
  /** With SAML_ALLOW_ENCRYPTED_ASSERTIONS: the keys an encrypted assertion is decrypted with, current first. */
  readonly decryptionKeys: ReadonlyArray<KeyObject>
}

export interface SamlConnection {
  readonly idp: IdpMetadata
  /** saml_providers.name_id_format, or null for persistent. */
  readonly nameIdFormat: string | null
}

/** node-saml's InResponseTo cache, holding the one request this response may answer (none: IdP-initiated). */
const oneRequest = (requestId: string | undefined, createdAt: Date) => ({
  saveAsync: async (_key: string, value: string) => ({ value, createdAt: Date.now() }),
  getAsync: async (key: string) => (requestId !== undefined && key === requestId ? createdAt.toISOString() : null),
  removeAsync: async (_key: string | null) => null
})

/**
 * node-saml (and with it xml-crypto, xpath, xmlbuilder), required on the first SAML request rather than at start-up:
 * most servers never enable SAML, and every process would hold its code. Each caller of samlFor runs it inside a
 * tryPromise, so a library that cannot be loaded is a refusal whose logged reason says so.
 */
let nodeSaml: typeof NodeSaml | undefined
const library = (): typeof NodeSaml => (nodeSaml ??= createRequire(import.meta.url)("@node-saml/node-saml") as typeof NodeSaml)

const pem = (key: KeyObject) => key.export({ type: "pkcs8", format: "pem" }).toString()

const samlFor = (
  sp: SpKeys,
  connection: SamlConnection,
  request: { readonly id?: string; readonly createdAt: Date },
  decryptionKey?: KeyObject
) => {
  const { SAML, ValidateInResponseTo } = library()
  return new SAML({
    ...(decryptionKey === undefined ? {} : { decryptionPvk: pem(decryptionKey) }),
    idpCert: connection.idp.signingCertificates.map(pemCertificate),
    issuer: sp.urls.metadata,
    audience: sp.urls.metadata,
    callbackUrl: sp.urls.acs,
    ...(connection.idp.ssoRedirectUrl === undefined ? {} : { entryPoint: connection.idp.ssoRedirectUrl }),
    privateKey: pem(sp.privateKey),
    signatureAlgorithm: "sha256",
    identifierFormat: connection.nameIdFormat ?? NAMEID_FORMAT.persistent,
    allowCreate: true,
    disableRequestedAuthnContext: true,
    generateUniqueId: () => request.id ?? "",
    // Either the Response's or the Assertion's signature must verify (crewjam's rule); node-saml then reads only
    // what the valid signature covers.
    wantAuthnResponseSigned: false,
    wantAssertionsSigned: false,
    acceptedClockSkewMs: 180_000,
    validateInResponseTo: request.id === undefined ? ValidateInResponseTo.never : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: 24 * 60 * 60 * 1000,
    cacheProvider: oneRequest(request.id, request.createdAt)
  })
}

/** The AuthnRequest redirect (HTTP-Redirect binding, signed RSA-SHA256) for a request id and relay state. */
export const authnRequestUrl = (sp: SpKeys, connection: SamlConnection, requestId: string, relayState: string) =>
  Effect.tryPromise({
    try: () => samlFor(sp, connection, { id: requestId, createdAt: new Date() }).getAuthorizeUrlAsync(relayState, undefined, {}),
    catch: (error) => String(error)
  })

/** The unverified Response's Issuer (IdP-initiated: which provider to verify it with), or why it is unreadable. */
export const responseIssuer = (samlResponse: string): Either.Either<string, string> => {
  if (samlResponse === "") return Either.left("SAMLResponse is missing")
  if (!/^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/.test(samlResponse)) return Either.left("SAMLResponse is not a valid Base64 string")
  const root = parseXml(Buffer.from(samlResponse, "base64").toString("utf8"))
  if (root === undefined || root.localName !== "Response" || root.namespaceURI !== PROTOCOL) {
    return Either.left("SAMLResponse is not a valid XML SAML assertion")
  }
  const issuer = childElements(root, ASSERTION, "Issuer")[0]
    ?? childElements(root, ASSERTION, "Assertion").flatMap((assertion) => childElements(assertion, ASSERTION, "Issuer"))[0]
  return Either.right((issuer?.textContent ?? "").trim())
}

/**
 * Checks on the Response envelope. They read the posted XML, which only the Response signature (when there is one)
 * covers, so they can only refuse: a Destination other than the ACS, an Issuer other than the provider's.
 */
const envelopeProblem = (samlResponse: string, sp: SpKeys, idpEntityId: string): string | undefined => {
  const root = parseXml(Buffer.from(samlResponse, "base64").toString("utf8"))
  if (root === undefined) return "response is not XML"
  const destination = root.getAttribute("Destination")
  if (destination !== null && destination !== "" && destination !== sp.urls.acs) return "response Destination is not this ACS"
  const issuer = childElements(root, ASSERTION, "Issuer")[0]
  if (issuer !== undefined && (issuer.textContent ?? "").trim() !== idpEntityId) return "response Issuer is not the provider's"
  return undefined
}

/**
 * Verifies a posted SAMLResponse with node-saml (signature over the Response or the Assertion, audience, time
 * conditions with 180 s skew, InResponseTo when SP-initiated) and then what node-saml leaves out, on the assertion
 * it verified. The assertion, or the reason it was refused (for the log only: it may quote the response).
 */
export const verifyResponse = (
  sp: SpKeys,
  connection: SamlConnection,
  samlResponse: string,
  request: { readonly id: string; readonly createdAt: Date } | undefined,
  now: number
): Effect.Effect<VerifiedAssertion, string> =>
  Effect.gen(function*() {
    const envelope = envelopeProblem(samlResponse, sp, connection.idp.entityId)
    if (envelope !== undefined) return yield* Effect.fail(envelope)
    if (connection.idp.signingCertificates.length === 0) return yield* Effect.fail("the provider's metadata has no signing certificate")
    // An encrypted assertion is decrypted with the current key, else the next one (during a rotation).
    const attempt = (decryptionKey: KeyObject | undefined) =>
      Effect.tryPromise({
        try: () => samlFor(sp, connection, request ?? { createdAt: new Date(now) }, decryptionKey).validatePostResponseAsync({ SAMLResponse: samlResponse }),
        catch: (error) => error instanceof Error ? error.message : String(error)
      })
    const [first, ...others] = sp.decryptionKeys
    const { profile } = yield* others.reduce(
      (tried, key) => Effect.orElse(tried, () => attempt(key)),
      attempt(first)
    )
    if (profile === null) return yield* Effect.fail("response carries no assertion")
    const assertion = profile.getAssertionXml === undefined ? undefined : readAssertion(parseXml(profile.getAssertionXml()))
    if (assertion === undefined) return yield* Effect.fail("verified assertion is unreadable")
    const problem = assertionProblem(assertion, { idpEntityId: connection.idp.entityId, acsUrl: sp.urls.acs, now })
    if (problem !== undefined) return yield* Effect.fail(problem)
    return assertion
  })
