import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { SamlAttributeMapping } from "../domain/SamlAssertion.js"
import { parseIdpMetadata, signOnProblem } from "../domain/SamlIdpMetadata.js"
import { NAMEID_FORMAT } from "../domain/SamlSpMetadata.js"
import { ssoFieldTooLong } from "../domain/SsoFieldLimit.js"
import { fetchSamlMetadata } from "./SamlMetadataFetcher.js"
import { parseXml } from "./XmlParser.js"
import { type SsoProviderRow, SsoRepo } from "./SsoRepo.js"
import { traced } from "../../platform/Traced.js"

/** The admin body (create and update), as GoTrue reads it: every field optional, checked here in GoTrue's order. */
export interface ProviderBody {
  readonly type?: string | null | undefined
  readonly metadata_url?: string | null | undefined
  readonly metadata_xml?: string | null | undefined
  readonly domains?: ReadonlyArray<string> | null | undefined
  readonly attribute_mapping?: unknown
  readonly name_id_format?: string | null | undefined
  readonly resource_id?: string | null | undefined
  readonly disabled?: boolean | null | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NAME_ID_FORMATS: ReadonlyArray<string> = ["", NAMEID_FORMAT.persistent, NAMEID_FORMAT.emailAddress, NAMEID_FORMAT.transient, NAMEID_FORMAT.unspecified]

const notFound = () => AuthError.of(404, "sso_provider_not_found", "SSO Identity Provider not found")

/** The provider as GoTrue's JSON shows it; the list leaves out metadata_xml. */
export const providerJson = (row: SsoProviderRow, withXml: boolean) => ({
  id: row.id,
  ...(row.resource_id === null ? {} : { resource_id: row.resource_id }),
  disabled: row.disabled,
  saml: {
    entity_id: row.entity_id,
    ...(withXml ? { metadata_xml: row.metadata_xml } : {}),
    ...(row.metadata_url === null || row.metadata_url === "" ? {} : { metadata_url: row.metadata_url }),
    attribute_mapping: row.attribute_mapping ?? {},
    ...(row.name_id_format === null || row.name_id_format === "" ? {} : { name_id_format: row.name_id_format })
  },
  domains: row.domains,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})
export type ProviderJson = ReturnType<typeof providerJson>

const decodeMapping = Schema.decodeUnknownEither(SamlAttributeMapping)

/**
 * Admin management of SSO providers (GoTrue's ssoadmin.go, reference §4.6): SAML connections given by metadata XML or
 * an https metadata URL, their email domains and attribute mapping. Not gated by SAML_ENABLED, as in GoTrue.
 */
export class AdminSsoProviders extends Effect.Service<AdminSsoProviders>()("auth/AdminSsoProviders", {
  effect: Effect.gen(function*() {
    const repo = yield* SsoRepo
    const transactions = yield* Transactions
    const random = yield* SecureRandom

    /** The metadata fields of a body: checked, fetched when a URL, and parsed. None when neither is sent. */
    const metadataOf = (body: ProviderBody, required: boolean) =>
      Effect.gen(function*() {
        const xml = body.metadata_xml ?? ""
        const url = body.metadata_url ?? ""
        if (xml !== "" && url !== "") return yield* AuthError.validation("Only one of metadata_xml or metadata_url needs to be set")
        if (xml === "" && url === "") {
          if (required) return yield* AuthError.validation("Either metadata_xml or metadata_url must be set")
          return Option.none()
        }
        let parsedUrl: URL | undefined
        if (url !== "") {
          try {
            parsedUrl = new URL(url)
          } catch {
            return yield* AuthError.validation("metadata_url is not a valid URL")
          }
          if (parsedUrl.protocol !== "https:") return yield* AuthError.validation("metadata_url is not a HTTPS URL")
        }
        return Option.some({ xml, url: parsedUrl === undefined ? null : url })
      })

    const checkNameIdFormat = (format: string | null | undefined) =>
      NAME_ID_FORMATS.includes(format ?? "")
        ? Effect.void
        : Effect.fail(AuthError.validation(`name_id_format must be unspecified or one of ${NAME_ID_FORMATS.slice(1).join(", ")}`))

    const loadMetadata = (source: { readonly xml: string; readonly url: string | null }) =>
      Effect.gen(function*() {
        const bytes = source.url === null ? Buffer.from(source.xml, "utf8") : yield* fetchSamlMetadata(source.url)
        const parsed = parseIdpMetadata(bytes, parseXml)
        if (Either.isLeft(parsed)) return yield* AuthError.validation(parsed.left.message)
        const problem = signOnProblem(parsed.right)
        if (problem !== undefined) return yield* AuthError.validation(problem.message)
        const tooLong = ssoFieldTooLong("SAML Metadata EntityID", parsed.right.entityId)
        if (tooLong !== undefined) return yield* AuthError.validation(tooLong)
        return { xml: bytes.toString("utf8"), url: source.url, entityId: parsed.right.entityId }
      })

    const mappingOf = (value: unknown) =>
      Either.match(decodeMapping(value ?? {}), {
        onLeft: () => Effect.fail(AuthError.validation("attribute_mapping must be {\"keys\": {\"<claim>\": {\"name\", \"names\", \"default\", \"array\"}}}")),
        onRight: Effect.succeed
      })

    const lookup = (idpId: string) =>
      Effect.gen(function*() {
        if (idpId.startsWith("resource_")) {
          const found = yield* repo.findByResourceId(idpId.slice("resource_".length))
          return yield* Option.match(found, { onNone: () => Effect.fail(notFound()), onSome: Effect.succeed })
        }
        if (!UUID.test(idpId)) return yield* notFound()
        const found = yield* repo.findById(idpId.toLowerCase())
        return yield* Option.match(found, { onNone: () => Effect.fail(notFound()), onSome: Effect.succeed })
      })

    const list = traced("AdminSsoProviders.list")(function*(filter: { readonly resource_id?: string | undefined; readonly resource_id_prefix?: string | undefined }) {
      const rows = yield* repo.list({
        ...(filter.resource_id !== undefined && filter.resource_id !== "" ? { resourceId: filter.resource_id } : {}),
        ...(filter.resource_id_prefix !== undefined && filter.resource_id_prefix !== "" ? { resourceIdPrefix: filter.resource_id_prefix } : {})
      })
      return { items: rows.map((row) => providerJson(row, false)) }
    })

    const get = traced("AdminSsoProviders.get")(function*(idpId: string): Effect.fn.Return<ProviderJson, AuthError> {
      return providerJson(yield* lookup(idpId), true)
    })

    // GoTrue inserts an empty domain and answers the check constraint's 500.
    const uniqueDomains = (domains: ReadonlyArray<string>) => {
      if (domains.includes("")) return Effect.fail(AuthError.validation("SSO domains must not be empty"))
      const tooLong = domains.map((domain) => ssoFieldTooLong("An SSO domain", domain)).find((problem) => problem !== undefined)
      return tooLong === undefined ? Effect.succeed([...new Set(domains)]) : Effect.fail(AuthError.validation(tooLong))
    }

    const checkResourceId = (resourceId: string | null | undefined) => {
      const tooLong = ssoFieldTooLong("resource_id", resourceId ?? "")
      return tooLong === undefined ? Effect.void : Effect.fail(AuthError.validation(tooLong))
    }

    const create = traced("AdminSsoProviders.create")(function*(body: ProviderBody): Effect.fn.Return<ProviderJson, AuthError> {
      if (body.type !== "saml") return yield* AuthError.validation("Only 'saml' supported for SSO provider type")
      const source = Option.getOrThrow(yield* metadataOf(body, true))
      yield* checkNameIdFormat(body.name_id_format)
      yield* checkResourceId(body.resource_id)
      const attributeMapping = yield* mappingOf(body.attribute_mapping)
      const metadata = yield* loadMetadata(source)
      if (Option.isSome(yield* repo.findByEntityId(metadata.entityId))) {
        return yield* AuthError.of(422, "saml_idp_already_exists", `SAML Identity Provider with this EntityID (${metadata.entityId}) already exists`)
      }
      const domains = yield* uniqueDomains(body.domains ?? [])
      for (const owner of yield* repo.domainOwners(domains)) {
        return yield* AuthError.of(400, "sso_domain_already_exists",
          `SSO Domain '${owner.domain}' is already assigned to an SSO identity provider (${owner.sso_provider_id})`)
      }
      const id = yield* random.uuid()
      const now = new Date(yield* Clock.currentTimeMillis)
      const domainRows = yield* Effect.forEach(domains, (domain) => Effect.map(random.uuid(), (domainId) => ({ id: domainId, domain })))
      yield* transactions.run(repo.insert({
        id,
        samlId: yield* random.uuid(),
        resourceId: body.resource_id === undefined || body.resource_id === null || body.resource_id === "" ? null : body.resource_id,
        disabled: body.disabled ?? null,
        entityId: metadata.entityId,
        metadataXml: metadata.xml,
        metadataUrl: metadata.url,
        attributeMapping,
        nameIdFormat: body.name_id_format === undefined || body.name_id_format === null || body.name_id_format === "" ? null : body.name_id_format,
        domains: domainRows,
        now
      })).pipe(
        Effect.catchAll((error) =>
          isUniqueViolation(error)
            ? Effect.fail(AuthError.of(422, "conflict", "Creating SSO provider failed, likely due to a conflict. Try again?"))
            : Effect.die(error))
      )
      return yield* get(id)
    })

    const update = traced("AdminSsoProviders.update")(function*(idpId: string, body: ProviderBody): Effect.fn.Return<ProviderJson, AuthError> {
      const current = yield* lookup(idpId)
      const source = yield* metadataOf(body, false)
      yield* checkNameIdFormat(body.name_id_format)
      yield* checkResourceId(body.resource_id)
      let metadata: { readonly xml: string; readonly url: string | null } | undefined
      if (Option.isSome(source)) {
        const loaded = yield* loadMetadata(source.value)
        if (loaded.entityId !== current.entity_id) {
          return yield* AuthError.of(400, "saml_entity_id_mismatch",
            `SAML Metadata can be updated only if the EntityID matches for the provider; expected '${current.entity_id}' but got '${loaded.entityId}'`)
        }
        metadata = { xml: loaded.xml, url: loaded.url }
      }
      let domainRows: Array<{ id: string; domain: string }> | undefined
      if (body.domains !== undefined && body.domains !== null) {
        const domains = yield* uniqueDomains(body.domains)
        for (const owner of yield* repo.domainOwners(domains)) {
          if (owner.sso_provider_id !== current.id) {
            return yield* AuthError.of(400, "sso_domain_already_exists", `SSO domain '${owner.domain}' already assigned to another provider (${owner.sso_provider_id})`)
          }
        }
        domainRows = yield* Effect.forEach(domains, (domain) => Effect.map(random.uuid(), (id) => ({ id, domain })))
      }
      const mapping = body.attribute_mapping === undefined || body.attribute_mapping === null
        ? undefined
        : yield* mappingOf(body.attribute_mapping)
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* transactions.run(repo.update(current.id, {
        ...(body.resource_id === undefined || body.resource_id === null ? {} : { resourceId: body.resource_id === "" ? null : body.resource_id }),
        ...(body.disabled === undefined || body.disabled === null ? {} : { disabled: body.disabled }),
        ...(metadata === undefined ? {} : { metadata }),
        ...(mapping === undefined || mapping.keys === undefined || mapping.keys === null ? {} : { attributeMapping: mapping }),
        nameIdFormat: body.name_id_format === undefined || body.name_id_format === null || body.name_id_format === "" ? null : body.name_id_format,
        ...(domainRows === undefined ? {} : { domains: domainRows }),
        now
      })).pipe(
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.logWarning("updating an SSO provider failed").pipe(Effect.annotateLogs("reason", String(error))),
            Effect.fail(AuthError.of(422, "conflict", "Updating SSO provider failed, likely due to a conflict. Try again?"))
          ))
      )
      return yield* get(current.id)
    })

    const remove = traced("AdminSsoProviders.remove")(function*(idpId: string): Effect.fn.Return<ProviderJson, AuthError> {
      const current = yield* lookup(idpId)
      yield* repo.remove(current.id)
      return providerJson(current, true)
    })

    return { list, get, create, update, remove } as const
  }),
  dependencies: [SsoRepo.Default, Transactions.Live]
}) {}
