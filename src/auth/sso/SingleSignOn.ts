import { createHash } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { lazyModule } from "../../platform/LazyModule.js"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { appMetadataAfterSignIn } from "../domain/ExternalLink.js"
import { mergeMetadata } from "../domain/MergeMetadata.js"
import { requestedPkce } from "../domain/Pkce.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import {
  assertionReplayExpiry,
  identityTooLong,
  mapAttributes,
  samlEmail,
  samlIdentityData,
  samlUserId,
  type VerifiedAssertion
} from "../domain/SamlAssertion.js"
import { type IdpMetadata, isMetadataStale, parseIdpMetadata, signOnProblem } from "../domain/SamlIdpMetadata.js"
import { spMetadataXml } from "../domain/SamlSpMetadata.js"
import { acsErrorRedirect, acsSessionRedirect, samlUrls } from "../domain/SamlUrls.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { UniqueViolation, UsersRepo } from "../users/UsersRepo.js"
import { authnRequestUrl, responseIssuer, type SpKeys, verifyResponse } from "./SamlServiceProvider.js"
import { fetchSamlMetadata } from "./SamlMetadataFetcher.js"
import { parseXml } from "./XmlParser.js"
import { type SsoProviderRow, SsoRepo } from "./SsoRepo.js"
import { traced } from "../../platform/Traced.js"

export interface SsoStart {
  readonly providerId?: string | null | undefined
  readonly domain?: string | null | undefined
  readonly redirectTo?: string | null | undefined
  readonly codeChallenge?: string | null | undefined
  readonly codeChallengeMethod?: string | null | undefined
}

export interface AcsPost {
  readonly SAMLResponse?: string | undefined
  readonly RelayState?: string | undefined
  readonly SAMLart?: string | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const YEAR_MS = 365 * 24 * 60 * 60 * 1000

const isAbsoluteUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return url.protocol !== "" && url.host !== ""
  } catch {
    return false
  }
}

// The SP certificate rules (the peculiar ASN.1 schemas), imported for the first metadata request, not at start-up.
const samlCertificates = lazyModule("the SAML certificate rules", () => import("../domain/SamlCertificate.js"))

const disabledAtAcs = () => AuthError.of(404, "sso_provider_disabled", "SSO Provider assigned for this domain is currently disabled")
const notValid = () => AuthError.validation("SAML Assertion is not valid")

/**
 * The stored metadata of a provider. The admin API checked it, but GoTrue, on the same tables, takes some that
 * Gatehouse refuses (a DOCTYPE): GoTrue's 500, as an error (the ACS then redirects with it) rather than a crash.
 */
const metadataOf = (provider: SsoProviderRow): Effect.Effect<IdpMetadata, AuthError> =>
  Either.match(parseIdpMetadata(provider.metadata_xml, parseXml), {
    onLeft: (problem) =>
      Effect.zipRight(
        Effect.logWarning("stored SAML metadata is unreadable").pipe(Effect.annotateLogs({ provider: provider.id, reason: problem.message })),
        Effect.fail(AuthError.of(500, "unexpected_failure", "Error parsing SAML Metadata for SAML provider"))
      ),
    onRight: Effect.succeed
  })

/**
 * SAML single sign-on (reference §4.3–4.5): POST /sso starts an SP-initiated sign-in at the provider's IdP, the
 * IdP posts its response to the ACS, and the browser leaves with a session (or a PKCE code). Responses are verified
 * by node-saml; Gatehouse adds the checks node-saml lacks and refuses an assertion used before (GoTrue accepts a
 * response again when it is posted without its RelayState).
 */
export class SingleSignOn extends Effect.Service<SingleSignOn>()("auth/SingleSignOn", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const repo = yield* SsoRepo
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const audit = yield* AuditLog
    const tokens = yield* AccessTokens
    const transactions = yield* Transactions
    const random = yield* SecureRandom
    const allowList = compileAllowList(config.uriAllowList)
    const urls = samlUrls(config.saml.externalUrl)
    const host = (() => {
      try {
        return new URL(platform.api.externalUrl).hostname
      } catch {
        return "localhost"
      }
    })()
    const sp: SpKeys | undefined = Option.match(config.saml.privateKey, {
      onNone: () => undefined,
      onSome: (key) => ({
        urls,
        privateKey: Redacted.value(key),
        decryptionKeys: config.saml.allowEncryptedAssertions
          ? [key, ...Option.toArray(config.saml.nextPrivateKey)].map((one) => Redacted.value(one))
          : []
      })
    })
    // The SP certificates of the metadata, made for its first request: the ASN.1 library that builds them is loaded
    // only then (most servers never enable SAML).
    const certificates = yield* Effect.cached(Effect.map(Effect.orDie(samlCertificates), ({ spCertificate }) =>
      [config.saml.privateKey, config.saml.nextPrivateKey].flatMap((key) =>
        Option.isSome(key) ? [spCertificate(Redacted.value(key.value), host, config.saml.allowEncryptedAssertions)] : [])))
    const keys = () => sp === undefined ? Effect.dieMessage("SAML is enabled without SAML_PRIVATE_KEY") : Effect.succeed(sp)

    /** GET /sso/saml/metadata: the document and whether it is a download. */
    const metadata = traced("SingleSignOn.metadata")(function*(download: boolean) {
      const now = yield* Clock.currentTimeMillis
      const rotating = Option.isSome(config.saml.nextPrivateKey)
      return {
        xml: spMetadataXml({
          urls,
          certificates: yield* certificates,
          encryption: config.saml.allowEncryptedAssertions,
          validUntil: new Date(now + (download ? 5 * YEAR_MS : 48 * 60 * 60 * 1000)),
          ...(rotating ? { cacheDuration: "PT1H" } : {})
        }),
        maxAge: rotating ? 60 : 600
      }
    })

    /** POST /sso: the IdP URL the browser is to go to, with a signed AuthnRequest and a relay state. */
    const start = traced("SingleSignOn.start")(function*(request: SsoStart): Effect.fn.Return<string, AuthError> {
      const providerId = request.providerId ?? ""
      const domain = request.domain ?? ""
      if (providerId !== "" && domain !== "") return yield* AuthError.validation("Only one of provider_id or domain supported")
      if (providerId === "" && domain === "") return yield* AuthError.validation("A provider_id or domain needs to be provided")
      let provider: SsoProviderRow
      if (providerId !== "") {
        const found = UUID.test(providerId) ? yield* repo.findById(providerId.toLowerCase()) : Option.none()
        if (Option.isNone(found)) return yield* AuthError.of(404, "sso_provider_not_found", "No such SSO provider")
        provider = found.value
      } else {
        const found = yield* repo.findByDomain(domain)
        if (Option.isNone(found)) return yield* AuthError.of(404, "sso_provider_not_found", "No SSO provider assigned for this domain")
        provider = found.value
      }
      if (provider.disabled === true) return yield* AuthError.of(404, "sso_provider_disabled", "SSO Provider is currently disabled")
      const pkce = yield* requestedPkce(request.codeChallenge, request.codeChallengeMethod)
      const idp = yield* metadataOf(provider)
      // Only a provider GoTrue stored (it takes such metadata), or one stored before the admin API refused it, lacks it.
      const noSignOn = signOnProblem(idp)
      if (noSignOn !== undefined) return yield* AuthError.validation(`The SSO provider cannot be used: ${noSignOn.message}`)
      const now = new Date(yield* Clock.currentTimeMillis)
      const flowId = yield* random.uuid()
      const relayId = yield* random.uuid()
      const requestId = `id-${(yield* random.bytes(20)).toString("hex")}`
      const redirectTo = request.redirectTo ?? ""
      const url = yield* authnRequestUrl(yield* keys(), { idp, nameIdFormat: provider.name_id_format }, requestId, relayId).pipe(
        Effect.tapError((reason) => Effect.logWarning("could not build the SAML AuthnRequest").pipe(Effect.annotateLogs("reason", reason))),
        Effect.mapError(() => new AuthError({ status: 500, code: "unexpected_failure", message: "Error creating SAML authentication request" }))
      )
      yield* transactions.run(Effect.gen(function*() {
        yield* repo.insertFlow({
          id: flowId,
          pkce: Option.isSome(pkce) ? { ...pkce.value, authCode: yield* random.uuid() } : null,
          referrer: redirectTo,
          now
        })
        yield* repo.insertRelayState({
          id: relayId,
          sso_provider_id: provider.id,
          request_id: requestId,
          redirect_to: redirectTo,
          flow_state_id: flowId,
          created_at: now
        })
      })).pipe(Effect.orDie)
      return url
    })

    const appMetadataAfter = (user: UserRow, provider: string) =>
      Effect.map(identities.forUser(user.id), (rows) => appMetadataAfterSignIn(user.raw_app_meta_data, provider, rows.map((row) => row.provider)))

    /**
     * The account of an SSO identity, in the caller's transaction: each SSO provider is its own linking domain, so
     * an SSO identity joins only a user of the same provider (by email), never a password or OAuth account.
     */
    const account = (provider: string, subject: string, email: string, data: Record<string, unknown>, at: Date) =>
      Effect.gen(function*() {
        const known = yield* identities.findByProvider(provider, subject)
        if (Option.isSome(known)) {
          const owner = Option.getOrThrow(yield* users.lockById(known.value.user_id))
          if (isBanned(owner, at)) return yield* AuthError.of(403, "user_banned", "User is banned")
          yield* identities.signedIn(known.value.id, data, at)
          const user = yield* users.update(owner.id, {
            raw_user_meta_data: mergeMetadata(owner.raw_user_meta_data ?? {}, data),
            raw_app_meta_data: yield* appMetadataAfter(owner, provider)
          }, at).pipe(Effect.orDie)
          return { user, created: false }
        }
        const owners = yield* repo.identityOwnersByEmail(provider, email)
        if (owners.length > 1) {
          return yield* AuthError.of(500, "unexpected_failure",
            `Multiple accounts with the same email address in the same linking domain detected: ${provider}`)
        }
        if (owners.length === 1) {
          const owner = Option.getOrThrow(yield* users.lockById(owners[0]!))
          if (isBanned(owner, at)) return yield* AuthError.of(403, "user_banned", "User is banned")
          yield* identities.insert({ id: yield* random.uuid(), provider_id: subject, user_id: owner.id, identity_data: data, provider, now: at })
          const user = yield* users.update(owner.id, {
            raw_user_meta_data: mergeMetadata(owner.raw_user_meta_data ?? {}, data),
            raw_app_meta_data: yield* appMetadataAfter(owner, provider)
          }, at).pipe(Effect.orDie)
          return { user, created: false }
        }
        if (config.disableSignup) return yield* AuthError.of(422, "signup_disabled", "Signups not allowed for this instance")
        const id = yield* random.uuid()
        const user = yield* users.insert({
          id,
          aud: config.jwt.aud,
          role: config.jwt.defaultGroupName,
          email: email.toLowerCase(),
          phone: null,
          encrypted_password: "",
          email_confirmed_at: at,
          phone_confirmed_at: null,
          raw_app_meta_data: { provider, providers: [provider] },
          raw_user_meta_data: data,
          is_anonymous: false,
          is_sso_user: true,
          now: at
        }).pipe(Effect.orDie)
        yield* identities.insert({ id: yield* random.uuid(), provider_id: subject, user_id: id, identity_data: data, provider, now: at })
        return { user, created: true }
      })

    /** What the ACS found before verifying: the provider, and for an SP-initiated post its request and flow. */
    interface Located {
      readonly provider: SsoProviderRow
      readonly request: { readonly id: string; readonly createdAt: Date } | undefined
      readonly redirectTo: string
      readonly flowStateId: string | null
    }

    const locate = (post: AcsPost, now: Date) =>
      Effect.gen(function*() {
        const relayState = post.RelayState ?? ""
        if (UUID.test(relayState)) {
          const taken = yield* repo.takeRelayState(relayState.toLowerCase())
          if (Option.isNone(taken)) {
            return yield* AuthError.of(404, "saml_relay_state_not_found", "SAML RelayState does not exist, try logging in again?")
          }
          const relay = taken.value
          if (now.getTime() - relay.created_at.getTime() >= Duration.toMillis(config.saml.relayStateValidity)) {
            return yield* AuthError.of(422, "saml_relay_state_expired", "SAML RelayState has expired. Try logging in again?")
          }
          const provider = yield* repo.findById(relay.sso_provider_id)
          if (Option.isNone(provider)) return yield* AuthError.of(500, "unexpected_failure", "Unable to get SSO Provider from SAML RelayState")
          if (provider.value.disabled === true) return yield* disabledAtAcs()
          if ((post.SAMLart ?? "") !== "") return yield* AuthError.validation("SAML Artifact binding is not supported")
          return {
            provider: provider.value,
            request: { id: relay.request_id, createdAt: relay.created_at },
            redirectTo: relay.redirect_to,
            flowStateId: relay.flow_state_id
          } satisfies Located as Located
        }
        if (relayState !== "" && !isAbsoluteUrl(relayState)) return yield* AuthError.validation("SAML RelayState is not a valid UUID or URL")
        if ((post.SAMLart ?? "") !== "") return yield* AuthError.validation("SAML Artifact response can only be used with SP initiated flow")
        const issuer = responseIssuer(post.SAMLResponse ?? "")
        if (Either.isLeft(issuer)) return yield* AuthError.validation(issuer.left)
        const provider = yield* repo.findByEntityId(issuer.right)
        if (Option.isNone(provider)) {
          return yield* AuthError.of(404, "saml_idp_not_found", "A SAML connection has not been established with this Identity Provider")
        }
        if (provider.value.disabled === true) return yield* disabledAtAcs()
        return { provider: provider.value, request: undefined, redirectTo: relayState, flowStateId: null } satisfies Located as Located
      })

    /**
     * The metadata to verify with: the stored copy, or for a provider with a metadata_url whose copy is stale
     * (GoTrue's rule), a fresh one with the same entity ID; when the fetch fails the stored copy is used, as in GoTrue.
     */
    const currentMetadata = (provider: SsoProviderRow, now: number) =>
      Effect.gen(function*() {
        const stored = yield* metadataOf(provider)
        const url = provider.metadata_url ?? ""
        if (url === "" || !isMetadataStale(stored, provider.saml_updated_at, new Date(now))) {
          return { idp: stored, refreshed: undefined as string | undefined }
        }
        const fetched = yield* Effect.either(fetchSamlMetadata(url))
        const fresh = Either.flatMap(
          Either.mapLeft(fetched, (error) => error.message),
          (bytes) =>
            Either.flatMap(Either.mapLeft(parseIdpMetadata(bytes, parseXml), (problem) => problem.message), (idp) => {
              const noSignOn = signOnProblem(idp)
              return noSignOn === undefined ? Either.right({ idp, xml: bytes.toString("utf8") }) : Either.left(noSignOn.message)
            })
        )
        if (Either.isLeft(fresh) || fresh.right.idp.entityId !== provider.entity_id) {
          yield* Effect.logWarning("SAML metadata refresh failed; the stored copy is used").pipe(
            Effect.annotateLogs({ provider: provider.id, reason: Either.isLeft(fresh) ? fresh.left : "the entity ID changed" })
          )
          return { idp: stored, refreshed: undefined as string | undefined }
        }
        return { idp: fresh.right.idp, refreshed: fresh.right.xml }
      })

    /** The digest a used assertion is recorded under: the provider and the verified assertion's ID. */
    const digestOf = (providerId: string, assertion: VerifiedAssertion): Uint8Array =>
      new Uint8Array(createHash("sha256").update(providerId).update(Buffer.from([0])).update(assertion.id).digest())

    const signIn = (located: Located, assertion: VerifiedAssertion, now: number) =>
      Effect.gen(function*() {
        const provider = located.provider
        const at = new Date(now)
        const subject = samlUserId(assertion)
        if (subject === "") {
          return yield* AuthError.of(400, "saml_assertion_no_user_id",
            "SAML Assertion did not contain a persistent Subject Identifier attribute or Subject NameID uniquely identifying this user")
        }
        const claims = mapAttributes(assertion, provider.attribute_mapping ?? {})
        const mapped = claims["email"]
        const email = typeof mapped === "string" && mapped !== "" ? mapped : samlEmail(assertion)
        if (email === "") return yield* AuthError.of(400, "saml_assertion_no_email", "SAML Assertion does not contain an email address")
        const tooLong = identityTooLong(subject, email)
        if (tooLong !== undefined) return yield* AuthError.validation(tooLong)
        const data = samlIdentityData(claims, { issuer: provider.entity_id, subject, email })
        if (Either.isLeft(data)) return yield* AuthError.validation(`SAML Assertion attribute mapping: ${data.left}`)
        const providerType = `sso:${provider.id}`
        const target = chooseRedirect(located.redirectTo === "" ? undefined : located.redirectTo, config.siteUrl, allowList)

        const inTransaction = Effect.gen(function*() {
          const first = yield* repo.claimAssertion(digestOf(provider.id, assertion), assertionReplayExpiry(assertion, now))
          if (!first) return yield* AuthError.validation("SAML Assertion has already been used")
          const { created, user } = yield* account(providerType, subject, email, data.right, at)
          yield* audit.record(created ? "user_signedup" : "login", { actor: user, traits: { provider: providerType } })
          if (located.flowStateId !== null) {
            const flow = yield* repo.claimFlow(located.flowStateId, user.id, at).pipe(Effect.orDie)
            if (flow._tag === "Used") return yield* AuthError.of(400, "flow_state_already_used", "State has already been used")
            if (flow._tag === "Claimed") {
              const url = new URL(target)
              url.hash = ""
              url.searchParams.set("code", flow.authCode)
              return url.href
            }
          }
          // GoTrue's not_after: the IdP's SessionNotOnOrAfter ends the session (the PKCE path loses it, as in GoTrue).
          const session = yield* tokens.issue(user, "sso/saml", at, undefined, assertion.sessionNotOnOrAfter)
          yield* countTagged(AuthMetrics.signIns, "grant_type", "sso")
          return acsSessionRedirect(target, session)
        })
        const attempt = transactions.run(inTransaction).pipe(Effect.catchTag("SqlError", Effect.die))
        const lostRace = (defect: unknown) => defect instanceof UniqueViolation || isUniqueViolation(defect)
        return yield* attempt.pipe(Effect.catchSomeDefect((defect) => lostRace(defect) ? Option.some(attempt) : Option.none()))
      })

    /** POST /sso/saml/acs: where to send the browser, always (an error goes to SITE_URL with its parameters). */
    const acs = traced("SingleSignOn.acs")(function*(post: AcsPost): Effect.fn.Return<{ readonly location: string; readonly refused: boolean }> {
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* Effect.gen(function*() {
        const located = yield* locate(post, new Date(now))
        const { idp, refreshed } = yield* currentMetadata(located.provider, now)
        const assertion = yield* verifyResponse(yield* keys(), { idp, nameIdFormat: located.provider.name_id_format }, post.SAMLResponse ?? "", located.request, now).pipe(
          Effect.tapError((reason) =>
            Effect.logWarning("SAML response refused").pipe(Effect.annotateLogs({ reason: reason.slice(0, 200), provider: located.provider.id }))),
          Effect.mapError(notValid)
        )
        // Fresh metadata is kept once a response verified with it: a failed fetch or a bad copy never replaces it.
        if (refreshed !== undefined) yield* repo.refreshMetadata(located.provider.id, refreshed, new Date(now))
        return yield* signIn(located, assertion, now)
      }).pipe(Effect.either)
      return Either.match(outcome, {
        onLeft: (error) => ({ location: acsErrorRedirect(config.siteUrl, error), refused: true }),
        onRight: (location) => ({ location, refused: false })
      })
    })

    return { metadata, start, acs } as const
  }),
  dependencies: [SsoRepo.Default, UsersRepo.Default, IdentitiesRepo.Default, AccessTokens.Default, AuditLog.Default, Transactions.Live]
}) {}

