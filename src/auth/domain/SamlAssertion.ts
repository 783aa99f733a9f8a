import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { NAMEID_FORMAT } from "./SamlSpMetadata.js"
import { childElements, type XmlNode } from "./XmlNode.js"

const SAML = "urn:oasis:names:tc:SAML:2.0:assertion"
const BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
export const SUBJECT_ID_ATTRIBUTE = "urn:oasis:names:tc:SAML:attribute:subject-id"

/** crewjam/saml's MaxIssueDelay: how old an assertion's IssueInstant may be, without skew. */
export const MAX_ISSUE_DELAY_MS = 90_000
/** crewjam/saml's MaxClockSkew, which node-saml applies too (acceptedClockSkewMs). */
export const CLOCK_SKEW_MS = 180_000

/** One key of a provider's attribute mapping (GoTrue's SAMLAttribute). */
export const SamlAttribute = Schema.Struct({
  name: Schema.optional(Schema.String),
  names: Schema.optional(Schema.Array(Schema.String)),
  default: Schema.optional(Schema.Unknown),
  array: Schema.optional(Schema.Boolean)
})

/** saml_providers.attribute_mapping: `{"keys": {"<claim>": SamlAttribute}}`. */
export const SamlAttributeMapping = Schema.Struct({
  keys: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: SamlAttribute })))
})
export type SamlAttributeMapping = typeof SamlAttributeMapping.Type

export interface SamlAttributeValues {
  readonly name: string
  readonly friendlyName: string
  readonly values: ReadonlyArray<string>
}

/** What Gatehouse reads of an assertion node-saml verified: only the bytes its signature covers. */
export interface VerifiedAssertion {
  readonly id: string
  readonly issuer: string
  readonly issueInstant: Date | undefined
  readonly nameId: string | undefined
  readonly nameIdFormat: string
  readonly attributes: ReadonlyArray<SamlAttributeValues>
  /** Every SubjectConfirmation's method and data. */
  readonly confirmations: ReadonlyArray<{ readonly method: string; readonly recipient: string; readonly notOnOrAfter: Date | undefined }>
  readonly conditionsNotOnOrAfter: Date | undefined
  /** The earliest AuthnStatement SessionNotOnOrAfter. */
  readonly sessionNotOnOrAfter: Date | undefined
}

const children = (parent: XmlNode, name: string): Array<XmlNode> => childElements(parent, SAML, name)

const dateOf = (value: string | null): Date | undefined => {
  if (value === null || value === "") return undefined
  const at = new Date(value)
  return Number.isNaN(at.getTime()) ? undefined : at
}

const text = (element: XmlNode | undefined): string | undefined => element === undefined ? undefined : (element.textContent ?? "")

/** Reads an assertion (the parsed XML node-saml verified) as a plain value; undefined when it is not one Assertion. */
export const readAssertion = (root: XmlNode | undefined): VerifiedAssertion | undefined => {
  if (root === undefined || root.localName !== "Assertion" || root.namespaceURI !== SAML) return undefined
  const subject = children(root, "Subject")[0]
  const nameIdElement = subject === undefined ? undefined : children(subject, "NameID")[0]
  const attributes = children(root, "AttributeStatement").flatMap((statement) =>
    children(statement, "Attribute").map((attribute) => ({
      name: attribute.getAttribute("Name") ?? "",
      friendlyName: attribute.getAttribute("FriendlyName") ?? "",
      values: children(attribute, "AttributeValue").map((value) => value.textContent ?? "")
    })))
  const confirmations = subject === undefined ? [] : children(subject, "SubjectConfirmation").map((confirmation) => {
    const data = children(confirmation, "SubjectConfirmationData")[0]
    return {
      method: confirmation.getAttribute("Method") ?? "",
      recipient: data?.getAttribute("Recipient") ?? "",
      notOnOrAfter: dateOf(data?.getAttribute("NotOnOrAfter") ?? null)
    }
  })
  const conditions = children(root, "Conditions")[0]
  const sessionEnds = children(root, "AuthnStatement")
    .map((statement) => dateOf(statement.getAttribute("SessionNotOnOrAfter")))
    .filter((at): at is Date => at !== undefined)
    .sort((a, b) => a.getTime() - b.getTime())
  return {
    id: root.getAttribute("ID") ?? "",
    issuer: (text(children(root, "Issuer")[0]) ?? "").trim(),
    issueInstant: dateOf(root.getAttribute("IssueInstant")),
    nameId: text(nameIdElement),
    nameIdFormat: nameIdElement?.getAttribute("Format") ?? "",
    attributes,
    confirmations,
    conditionsNotOnOrAfter: dateOf(conditions?.getAttribute("NotOnOrAfter") ?? null),
    sessionNotOnOrAfter: sessionEnds[0]
  }
}

export interface AssertionContext {
  /** The provider's entity ID. */
  readonly idpEntityId: string
  /** The SP's ACS URL. */
  readonly acsUrl: string
  readonly now: number
}

/**
 * What crewjam/saml checks and node-saml does not, on the verified assertion: the Issuer is the provider's, a
 * bearer SubjectConfirmation names this ACS as Recipient and has not expired, and the IssueInstant is at most 90 s
 * old. The reason it
 * fails, for the log; undefined when it holds.
 */
export const assertionProblem = (assertion: VerifiedAssertion, context: AssertionContext): string | undefined => {
  if (assertion.id === "") return "assertion has no ID"
  if (assertion.issuer !== context.idpEntityId) return "assertion Issuer is not the provider's entity ID"
  const bearers = assertion.confirmations.filter((confirmation) => confirmation.method === BEARER && confirmation.recipient === context.acsUrl)
  if (bearers.length === 0) return "no bearer SubjectConfirmation with this ACS as Recipient"
  // node-saml checks the confirmation's times only when it checks InResponseTo: never for an IdP-initiated post.
  const open = (at: Date | undefined) => at === undefined || at.getTime() + CLOCK_SKEW_MS > context.now
  if (!bearers.some((confirmation) => open(confirmation.notOnOrAfter))) return "the bearer SubjectConfirmation has expired"

  if (assertion.issueInstant === undefined) return "assertion has no IssueInstant"
  if (assertion.issueInstant.getTime() + MAX_ISSUE_DELAY_MS < context.now) return "assertion IssueInstant is too old"
  if (assertion.issueInstant.getTime() > context.now + CLOCK_SKEW_MS) return "assertion IssueInstant is in the future"
  return undefined
}

/** The values of every attribute whose Name or FriendlyName is `name`, case-insensitively (crewjam's Attribute). */
export const attributeValues = (assertion: VerifiedAssertion, name: string): ReadonlyArray<string> => {
  const wanted = name.toLowerCase()
  return assertion.attributes
    .filter((attribute) => attribute.name.toLowerCase() === wanted || attribute.friendlyName.toLowerCase() === wanted)
    .flatMap((attribute) => attribute.values)
}

/**
 * GoTrue's UserID: the subject-id attribute's first value, else the NameID unless transient (an emailAddress NameID
 * trimmed and lowercased). "" when there is none.
 */
export const samlUserId = (assertion: VerifiedAssertion): string => {
  const subjectIds = attributeValues(assertion, SUBJECT_ID_ATTRIBUTE)
  if (subjectIds.length > 0) return subjectIds[0]!
  if (assertion.nameId === undefined) return ""
  if (assertion.nameIdFormat === NAMEID_FORMAT.emailAddress) return assertion.nameId.trim().toLowerCase()
  if (assertion.nameIdFormat === NAMEID_FORMAT.transient) return ""
  return assertion.nameId
}

/** users.email is varchar(255). */
const MAX_EMAIL_LENGTH = 255
/** identities' unique (provider_id, provider) index holds a row of at most 2704 bytes: 512 characters of 4 bytes fit. */
const MAX_SUBJECT_LENGTH = 512

/**
 * Why a signed-in identity cannot be stored (GoTrue's database refusal, a 500 there): an email or user id longer
 * than its column or index holds. undefined when both fit.
 */
export const identityTooLong = (subject: string, email: string): string | undefined =>
  email.length > MAX_EMAIL_LENGTH
    ? `SAML Assertion email address is longer than ${MAX_EMAIL_LENGTH} characters`
    : subject.length > MAX_SUBJECT_LENGTH
    ? `SAML Assertion user identifier is longer than ${MAX_SUBJECT_LENGTH} characters`
    : undefined

const EMAIL_ATTRIBUTES = [
  "urn:oid:0.9.2342.19200300.100.1.3",
  "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
  "http://schemas.xmlsoap.org/claims/EmailAddress",
  "mail",
  "Mail",
  "email"
]

/** GoTrue's Email: the first non-empty of the usual email attributes, else an emailAddress NameID. "" when none. */
export const samlEmail = (assertion: VerifiedAssertion): string => {
  for (const name of EMAIL_ATTRIBUTES) {
    const found = attributeValues(assertion, name).find((value) => value !== "")
    if (found !== undefined) return found
  }
  if (assertion.nameIdFormat === NAMEID_FORMAT.emailAddress) return assertion.nameId ?? ""
  return ""
}

/** GoTrue's Process: each mapped key from its first attribute name with a non-empty value, else its default. */
export const mapAttributes = (assertion: VerifiedAssertion, mapping: SamlAttributeMapping): Record<string, unknown> => {
  const result: Record<string, unknown> = {}
  for (const [key, mapper] of Object.entries(mapping.keys ?? {})) {
    const names = [...(mapper.name !== undefined && mapper.name !== "" ? [mapper.name] : []), ...(mapper.names ?? [])]
    let set = false
    for (const name of names) {
      const values = attributeValues(assertion, name).filter((value) => value !== "")
      if (values.length === 0) continue
      result[key] = mapper.array === true ? values : values[0]
      set = true
      break
    }
    if (!set && mapper.default !== undefined && mapper.default !== null) result[key] = mapper.default
  }
  return result
}

/** GoTrue's Claims fields that are strings (json names). */
const STRING_CLAIMS = [
  "name", "family_name", "given_name", "middle_name", "nickname", "preferred_username", "profile", "picture", "website",
  "gender", "birthdate", "zoneinfo", "locale", "phone", "full_name", "avatar_url", "slug", "provider_id", "user_name"
]
const NUMBER_CLAIMS = ["iat", "exp"]

/**
 * The identity_data GoTrue stores for a SAML sign-in (its Claims struct as a map): `iss` the IdP's entity ID, `sub`
 * the user id, the email (verified), the mapped keys that are Claims fields, and every other mapped key under
 * `custom_claims`. A mapped value that does not fit its field is refused (GoTrue answers 500).
 */
export const samlIdentityData = (
  claims: Record<string, unknown>,
  fixed: { readonly issuer: string; readonly subject: string; readonly email: string }
): Either.Either<Record<string, unknown>, string> => {
  const data: Record<string, unknown> = {}
  const custom: Record<string, unknown> = {}
  let phoneVerified = false
  for (const [key, value] of Object.entries(claims)) {
    if (key === "iss" || key === "sub" || key === "email" || key === "email_verified" || key === "custom_claims") continue
    if (STRING_CLAIMS.includes(key)) {
      if (typeof value !== "string") return Either.left(`mapped claim ${key} must be a string`)
      if (value !== "") data[key] = value
    } else if (NUMBER_CLAIMS.includes(key)) {
      if (typeof value !== "number") return Either.left(`mapped claim ${key} must be a number`)
      if (value !== 0) data[key] = value
    } else if (key === "aud") {
      if (typeof value !== "string" && !(Array.isArray(value) && value.every((entry) => typeof entry === "string"))) {
        return Either.left("mapped claim aud must be a string or strings")
      }
      data[key] = value
    } else if (key === "phone_verified") {
      if (typeof value !== "boolean") return Either.left("mapped claim phone_verified must be a boolean")
      phoneVerified = value
    } else if (key === "updated_at") {
      if (typeof value !== "string" && typeof value !== "number") return Either.left("mapped claim updated_at must be a string or number")
      data[key] = value
    } else {
      custom[key] = value
    }
  }
  return Either.right({
    iss: fixed.issuer,
    sub: fixed.subject,
    ...data,
    email: fixed.email,
    email_verified: true,
    phone_verified: phoneVerified,
    ...(Object.keys(custom).length > 0 ? { custom_claims: custom } : {})
  })
}

/**
 * Until when a used assertion is remembered: after this it cannot pass the time checks anyway (its latest bound,
 * the issue delay included, plus the clock skew).
 */
export const assertionReplayExpiry = (assertion: VerifiedAssertion, now: number): Date => {
  const issued = assertion.issueInstant?.getTime() ?? now
  const bounds = [
    issued + MAX_ISSUE_DELAY_MS,
    assertion.conditionsNotOnOrAfter?.getTime(),
    ...assertion.confirmations.map((confirmation) => confirmation.notOnOrAfter?.getTime())
  ].filter((at): at is number => at !== undefined)
  return new Date(Math.max(...bounds) + CLOCK_SKEW_MS)
}
