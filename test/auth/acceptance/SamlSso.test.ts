/**
 * SAML 2.0 single sign-on with an identity provider in the test process (test/support/SamlTestIdp: its own key and
 * certificate, responses signed with xml-crypto): auth-js's signInWithSSO round trip in the PKCE and implicit flows,
 * the admin provider API, and the refusals the issue names (unsigned, wrong audience, expired, replayed, signature
 * wrapping), each of which writes no user, identity or session.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { randomBytes, randomUUID } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { GOTRUE_READABLE } from "../../../src/auth/domain/GoTrueReadable.js"
import { PERSISTENT_FORMAT, type ResponseOptions, SamlTestIdp, spPrivateKeySetting } from "../../support/SamlTestIdp.js"
import { ServerUrl, TestServerOver } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, decodeJwt, expectingErrors, postAcs, raw } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const SP_ENTITY_ID = "http://localhost:9999/sso/saml/metadata"
const ACS = "http://localhost:9999/sso/saml/acs"

const admin = (url: string, path: string, method: string, body?: unknown) =>
  raw(url, path, { method, bearer: adminJwt(), ...(body === undefined ? {} : { body }) })


const refusal = (location: string) => {
  const target = new URL(location)
  return {
    origin: target.origin,
    error: target.searchParams.get("error"),
    error_code: target.searchParams.get("error_code"),
    error_description: target.searchParams.get("error_description")
  }
}

const newIdp = () => {
  const id = randomUUID().slice(0, 8)
  return new SamlTestIdp(`https://idp-${id}.example.org/metadata`, `https://idp-${id}.example.org/sso`)
}

/** A provider for a fresh IdP and domain, created through the admin API. */
const provider = (url: string, attributeMapping?: unknown) =>
  Effect.gen(function*() {
    const idp = newIdp()
    const domain = `corp-${randomUUID().slice(0, 8)}.example.com`
    const created = yield* admin(url, "/admin/sso/providers", "POST", {
      type: "saml",
      metadata_xml: idp.metadata(),
      domains: [domain],
      ...(attributeMapping === undefined ? {} : { attribute_mapping: attributeMapping })
    })
    expect(created.status, created.text).toBe(201)
    return { idp, domain, id: created.json.id as string }
  })

/** POST /sso for a provider, and the AuthnRequest the IdP receives. */
const begin = (url: string, providerId: string) =>
  Effect.gen(function*() {
    const started = yield* raw(url, "/sso", { body: { provider_id: providerId, skip_http_redirect: true } })
    expect(started.status, started.text).toBe(200)
    return started.json.url as string
  })

const withoutRedirect = (metadata: string) => metadata.replace(/<md:SingleSignOnService Binding="[^"]*HTTP-Redirect"[^>]*>/, "")
const NO_SIGN_ON = "SAML Metadata does not contain any SingleSignOnService with the HTTP-Redirect binding and an http or https Location"

const countRows = (email: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ users: number; identities: number; sessions: number }>`SELECT
      (SELECT count(*)::int FROM auth.users WHERE email = ${email}) AS users,
      (SELECT count(*)::int FROM auth.identities WHERE email = ${email}) AS identities,
      (SELECT count(*)::int FROM auth.sessions s JOIN auth.users u ON u.id = s.user_id WHERE u.email = ${email}) AS sessions`
    return row!
  })

const ENV = {
  AUTH_SITE_URL: SITE,
  AUTH_URI_ALLOW_LIST: `${SITE}/**`,
  AUTH_SAML_ENABLED: "true",
  AUTH_SAML_PRIVATE_KEY: spPrivateKeySetting()
}

describe("SAML single sign-on", () => {
  acceptance(ENV)((it) => {
    it.effect("auth-js signs in by domain with PKCE: IdP round trip, code exchange, an SSO user and identity", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { domain, id, idp } = yield* provider(url, { keys: { name: { name: "displayName" }, department: { name: "dept" } } })
        const { client } = authClient(url, { flowType: "pkce" })
        const started = yield* call(() => client.signInWithSSO({ domain, options: { redirectTo: `${SITE}/welcome` } }))
        expect(started.error).toBeNull()
        const request = idp.readRequest(started.data!.url)
        expect(request).toMatchObject({ acsUrl: ACS, issuer: SP_ENTITY_ID, destination: idp.ssoUrl, nameIdFormat: PERSISTENT_FORMAT })
        expect(request.id).toMatch(/^id-[0-9a-f]{40}$/)
        expect(request.url.searchParams.get("SigAlg")).toBe("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")

        const email = `Ada.${randomUUID().slice(0, 6)}@${domain}`
        const posted = yield* postAcs(url, {
          SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: email, attributes: { displayName: ["Ada L"], dept: ["R&D"] } }),
          RelayState: request.relayState
        })
        expect(posted.status).toBe(302)
        const landed = new URL(posted.location)
        expect(`${landed.origin}${landed.pathname}`).toBe(`${SITE}/welcome`)
        const code = landed.searchParams.get("code")!
        const exchanged = yield* call(() => client.exchangeCodeForSession(code))
        expect(exchanged.error).toBeNull()
        const user = exchanged.data.user!
        const providerType = `sso:${id}`
        expect(user).toMatchObject({
          email: email.toLowerCase(),
          app_metadata: { provider: providerType, providers: [providerType] },
          user_metadata: { iss: idp.entityId, sub: email.toLowerCase(), name: "Ada L", custom_claims: { department: "R&D" }, email_verified: true }
        })
        expect(user.identities).toHaveLength(1)
        expect(user.identities![0]).toMatchObject({ provider: providerType, id: email.toLowerCase() })
        expect(decodeJwt(exchanged.data.session!.access_token).payload).toMatchObject({ amr: [{ method: "sso/saml", provider: id }] })
        // A refresh mints it again from the session's claims.
        const refreshed = yield* call(() => client.refreshSession())
        expect(decodeJwt(refreshed.data.session!.access_token).payload).toMatchObject({ amr: [{ method: "sso/saml", provider: id }] })
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ is_sso_user: boolean }>`SELECT is_sso_user FROM auth.users WHERE id = ${user.id}`
        expect(row!.is_sso_user).toBe(true)
      }))

    it.effect("auth-js signs in by provider id in the implicit flow: the session in the fragment; the same subject finds the same user", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        const { client } = authClient(url)
        const email = `grace-${randomUUID().slice(0, 6)}@example.org`
        let userId = ""
        for (const round of [1, 2]) {
          const started = yield* call(() => client.signInWithSSO({ providerId: id }))
          expect(started.error).toBeNull()
          const request = idp.readRequest(started.data!.url)
          const posted = yield* postAcs(url, {
            SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: email }),
            RelayState: request.relayState
          })
          expect(posted.status).toBe(302)
          const fragment = new URLSearchParams(new URL(posted.location).hash.slice(1))
          expect(posted.location.startsWith(`${SITE}/#`)).toBe(true)
          const claims = decodeJwt(fragment.get("access_token")!).payload
          expect(claims).toMatchObject({ email, amr: [{ method: "sso/saml" }] })
          if (round === 1) userId = claims["sub"] as string
          else expect(claims["sub"]).toBe(userId)
        }
        expect(yield* countRows(email)).toStrictEqual({ users: 1, identities: 1, sessions: 2 })

        // The IdP's SessionNotOnOrAfter becomes the session's not_after.
        const ends = new Date(Math.floor(Date.now() / 1000) * 1000 + 8 * 3_600_000)
        const started = yield* call(() => client.signInWithSSO({ providerId: id }))
        const request = idp.readRequest(started.data!.url)
        const posted = yield* postAcs(url, {
          SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: email, sessionNotOnOrAfter: ends }),
          RelayState: request.relayState
        })
        const sessionId = decodeJwt(new URLSearchParams(new URL(posted.location).hash.slice(1)).get("access_token")!).payload["session_id"] as string
        const sql = yield* SqlClient.SqlClient
        const [session] = yield* sql<{ not_after: Date | null }>`SELECT not_after FROM auth.sessions WHERE id = ${sessionId}`
        expect(session!.not_after).toStrictEqual(ends)
      }))

    it.effect("POST /sso refusals: GoTrue's codes, through auth-js", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const unknownDomain = yield* call(() => client.signInWithSSO({ domain: "nobody.example.net" }))
        expect(unknownDomain.error).toMatchObject({ status: 404, code: "sso_provider_not_found", message: "No SSO provider assigned for this domain" })
        const unknownId = yield* call(() => client.signInWithSSO({ providerId: randomUUID() }))
        expect(unknownId.error).toMatchObject({ status: 404, code: "sso_provider_not_found", message: "No such SSO provider" })
        const neither = yield* raw(url, "/sso", { body: {} })
        expect(neither.json).toMatchObject({ error_code: "validation_failed", msg: "A provider_id or domain needs to be provided" })
        const both = yield* raw(url, "/sso", { body: { provider_id: randomUUID(), domain: "x.example" } })
        expect(both.json).toMatchObject({ error_code: "validation_failed", msg: "Only one of provider_id or domain supported" })

        const { id } = yield* provider(url)
        const halfPkce = yield* raw(url, "/sso", { body: { provider_id: id, code_challenge: "x".repeat(43) } })
        expect(halfPkce.json).toMatchObject({ error_code: "validation_failed", msg: "PKCE flow requires code_challenge_method and code_challenge" })
        const badMethod = yield* raw(url, "/sso", { body: { provider_id: id, code_challenge: "x".repeat(43), code_challenge_method: "md5" } })
        expect(badMethod.status).toBe(400)
        const disabled = yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { disabled: true })
        expect(disabled.status).toBe(200)
        const refused = yield* call(() => client.signInWithSSO({ providerId: id }))
        expect(refused.error).toMatchObject({ status: 404, code: "sso_provider_disabled" })
        const redirect = yield* call(() =>
          fetch(`${url}/sso`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ provider_id: id }), redirect: "manual" }))
        expect(redirect.status).toBe(404)
      }))

    it.effect("POST /sso for a provider stored without an HTTP-Redirect SingleSignOnService (GoTrue takes one) is a 400, never a 500", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE auth.saml_providers SET metadata_xml = ${withoutRedirect(idp.metadata())} WHERE sso_provider_id = ${id}`
        const answer = yield* raw(url, "/sso", { body: { provider_id: id, skip_http_redirect: true } })
        expect([answer.status, answer.json]).toStrictEqual([400, { code: 400, error_code: "validation_failed", msg: `The SSO provider cannot be used: ${NO_SIGN_ON}` }])
        // Metadata GoTrue takes and Gatehouse cannot read (a DOCTYPE) is GoTrue's 500 at /sso, and a redirect at the ACS.
        yield* sql`UPDATE auth.saml_providers SET metadata_xml = ${`<!DOCTYPE md>${idp.metadata().replace(/^<\?xml[^>]*>\s*/, "")}`} WHERE sso_provider_id = ${id}`
        const unreadable = yield* raw(url, "/sso", { body: { provider_id: id, skip_http_redirect: true } })
        expect([unreadable.status, unreadable.json]).toMatchObject([500, { code: 500, error_code: "unexpected_failure", msg: "Error parsing SAML Metadata for SAML provider" }])
        const posted = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: "unreadable@example.org" }) })
        expect([posted.status, refusal(posted.location).error_code]).toStrictEqual([303, "unexpected_failure"])
      })))

    it.effect("POST /sso without skip_http_redirect answers 303 to the IdP; the metadata document is served", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        const answer = yield* call(() =>
          fetch(`${url}/sso`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ provider_id: id }), redirect: "manual" }))
        expect(answer.status).toBe(303)
        expect(answer.headers.get("location")!.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true)
        const metadata = yield* raw(url, "/sso/saml/metadata")
        expect(metadata.status).toBe(200)
        expect(metadata.headers.get("content-type")).toContain("application/xml")
        expect(metadata.headers.get("cache-control")).toBe("public, max-age=600")
        expect(metadata.text).toContain(`entityID="${SP_ENTITY_ID}"`)
        expect(metadata.text).toContain(`<AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ACS}" index="1">`)
        expect(metadata.text).toMatch(/<X509Certificate>[A-Za-z0-9+/=]+<\/X509Certificate>/)
        const download = yield* raw(url, "/sso/saml/metadata?download=true")
        expect(download.headers.get("content-disposition")).toBe("attachment; filename=\"metadata.xml\"")
      }))

    describe("refusals at the ACS: 303 to SITE_URL, nothing written", () => {
      /** Runs one refused response for a fresh request and checks the redirect and that nothing was written. */
      const refused = (
        build: (idp: SamlTestIdp, request: { id: string; acsUrl: string }, email: string) => string,
        expected: { readonly code: string; readonly description: string } = { code: "validation_failed", description: "SAML Assertion is not valid" }
      ) =>
        expectingErrors(Effect.gen(function*() {
          const url = yield* ServerUrl
          const { id, idp } = yield* provider(url)
          const request = idp.readRequest(yield* begin(url, id))
          const email = `mallory-${randomUUID().slice(0, 6)}@example.org`
          const posted = yield* postAcs(url, { SAMLResponse: build(idp, request, email), RelayState: request.relayState })
          expect(posted.status, posted.text).toBe(303)
          expect(refusal(posted.location)).toStrictEqual({
            origin: SITE,
            error: "invalid_request",
            error_code: expected.code,
            error_description: expected.description
          })
          expect(yield* countRows(email)).toStrictEqual({ users: 0, identities: 0, sessions: 0 })
        }))
      const options = (request: { id: string; acsUrl: string }, email: string, more: Partial<ResponseOptions> = {}) =>
        ({ spEntityId: SP_ENTITY_ID, request, nameId: email, ...more })

      it.effect("an unsigned response", () => refused((idp, request, email) => idp.response(options(request, email, { sign: "none" }))))
      it.effect("a response signed by another key", () =>
        refused((idp, request, email) => idp.response(options(request, email, { signer: newIdp().signer }))))
      it.effect("a signed response and assertion, one signed by another key", () =>
        refused((idp, request, email) => idp.response(options(request, email, { sign: "both", signer: newIdp().signer }))))
      it.effect("an encrypted assertion while SAML_ALLOW_ENCRYPTED_ASSERTIONS is off", () =>
        expectingErrors(Effect.gen(function*() {
          const url = yield* ServerUrl
          const { id, idp } = yield* provider(url)
          const request = idp.readRequest(yield* begin(url, id))
          const certificate = /<X509Certificate>([^<]+)</.exec((yield* raw(url, "/sso/saml/metadata")).text)![1]!
          const posted = yield* postAcs(url, {
            SAMLResponse: yield* call(() => idp.encryptedResponse({ spEntityId: SP_ENTITY_ID, request, nameId: "sealed@example.org" }, certificate)),
            RelayState: request.relayState
          })
          expect(refusal(posted.location)).toMatchObject({ error_code: "validation_failed", error_description: "SAML Assertion is not valid" })
        })))
      it.effect("a wrong audience", () =>
        refused((idp, request, email) => idp.response(options(request, email, { audience: "https://other-sp.example.com/metadata" }))))
      it.effect("no AudienceRestriction", () => refused((idp, request, email) => idp.response(options(request, email, { audience: null }))))
      it.effect("an expired assertion (Conditions and SubjectConfirmationData past, beyond the skew)", () =>
        refused((idp, request, email) => {
          const past = new Date(Date.now() - 10 * 60_000)
          return idp.response(options(request, email, { notOnOrAfter: past, subjectNotOnOrAfter: past, issueInstant: new Date(Date.now() - 15 * 60_000) }))
        }))
      it.effect("an assertion issued more than 90 s ago, its conditions still open", () =>
        refused((idp, request, email) => idp.response(options(request, email, { issueInstant: new Date(Date.now() - 5 * 60_000) }))))
      it.effect("NotBefore in the future beyond the skew", () =>
        refused((idp, request, email) => idp.response(options(request, email, { notBefore: new Date(Date.now() + 10 * 60_000) }))))
      it.effect("a wrong Recipient", () =>
        refused((idp, request, email) => idp.response(options(request, email, { recipient: "https://evil.example.com/acs" }))))
      it.effect("a wrong Destination", () =>
        refused((idp, request, email) => idp.response(options(request, email, { destination: "https://evil.example.com/acs" }))))
      it.effect("an assertion from another issuer", () =>
        refused((idp, request, email) => idp.response(options(request, email, { issuer: "https://evil.example.com/idp" }))))
      it.effect("an InResponseTo of another request", () =>
        refused((idp, request, email) => idp.response(options(request, email, { inResponseTo: "id-0000000000000000000000000000000000000000" }))))
      it.effect("a signed assertion altered after signing", () =>
        refused((idp, request, email) => {
          const xml = idp.responseXml(options(request, email.replace("mallory", "alice")))
          return Buffer.from(xml.replace(email.replace("mallory", "alice"), email)).toString("base64")
        }))

      it.effect("XSW: an evil assertion beside the signed one", () =>
        refused((idp, request, email) => {
          const signed = idp.sign(idp.assertionXml(options(request, `victim-${email}`)), "//*[local-name(.)='Assertion']")
          const evil = idp.assertionXml(options(request, email))
          return Buffer.from(idp.responseXml(options(request, email), evil + signed)).toString("base64")
        }))
      it.effect("XSW: the signed assertion moved inside the evil one (Advice), the evil one on top", () =>
        refused((idp, request, email) => {
          const signed = idp.sign(idp.assertionXml(options(request, `victim-${email}`)), "//*[local-name(.)='Assertion']")
          const evil = idp.assertionXml(options(request, email)).replace("</saml:Assertion>", `<saml:Advice>${signed}</saml:Advice></saml:Assertion>`)
          return Buffer.from(idp.responseXml(options(request, email), evil)).toString("base64")
        }))
      it.effect("XSW: a signed response whose assertion is swapped for an evil one", () =>
        refused((idp, request, email) => {
          const xml = idp.responseXml(options(request, `victim-${email}`, { sign: "response" }))
          const swapped = xml.replace(/<saml:Assertion[\s\S]*<\/saml:Assertion>/, idp.assertionXml(options(request, email)))
          return Buffer.from(swapped).toString("base64")
        }))
      it.effect("XSW: the signed assertion with the evil subject and the signed one's ID, inside an Extensions wrapper", () =>
        refused((idp, request, email) => {
          const signed = idp.sign(idp.assertionXml(options(request, `victim-${email}`, { assertionId: "_same" })), "//*[local-name(.)='Assertion']")
          const evil = idp.assertionXml(options(request, email, { assertionId: "_same" }))
          const xml = idp.responseXml(options(request, email), evil)
            .replace("<samlp:Status>", `<samlp:Extensions>${signed}</samlp:Extensions><samlp:Status>`)
          return Buffer.from(xml).toString("base64")
        }))
    })

    it.effect("a NameID split by a comment signs in the signed subject whole, not the text before the comment", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        const request = idp.readRequest(yield* begin(url, id))
        const tag = randomUUID().slice(0, 6)
        const signed = idp.sign(
          idp.assertionXml({ spEntityId: SP_ENTITY_ID, request, nameId: `victim-${tag}@example.org.evil.example` }),
          "//*[local-name(.)='Assertion']"
        ).replace(`victim-${tag}@example.org.evil`, `victim-${tag}@example.org<!---->.evil`)
        const posted = yield* postAcs(url, {
          SAMLResponse: Buffer.from(idp.responseXml({ spEntityId: SP_ENTITY_ID, request }, signed)).toString("base64"),
          RelayState: request.relayState
        })
        // The comment changes nothing the signature covers (exclusive c14n drops comments), so the response is
        // valid, and the subject is the NameID's whole text.
        expect(posted.status).toBe(302)
        const claims = decodeJwt(new URLSearchParams(new URL(posted.location).hash.slice(1)).get("access_token")!).payload
        expect(claims["email"]).toBe(`victim-${tag}@example.org.evil.example`)
        expect(yield* countRows(`victim-${tag}@example.org`)).toStrictEqual({ users: 0, identities: 0, sessions: 0 })
      }))

    it.effect("a replayed assertion is refused: with its RelayState (gone) and without it (kept in Postgres), even where GoTrue signs in again", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        const request = idp.readRequest(yield* begin(url, id))
        const email = `replay-${randomUUID().slice(0, 6)}@example.org`
        const response = idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: email })
        const first = yield* postAcs(url, { SAMLResponse: response, RelayState: request.relayState })
        expect(first.status).toBe(302)
        expect(yield* countRows(email)).toStrictEqual({ users: 1, identities: 1, sessions: 1 })

        const again = yield* postAcs(url, { SAMLResponse: response, RelayState: request.relayState })
        expect(refusal(again.location)).toMatchObject({ error: "server_error", error_code: "saml_relay_state_not_found" })
        const withoutRelay = yield* postAcs(url, { SAMLResponse: response })
        expect(withoutRelay.status).toBe(303)
        expect(refusal(withoutRelay.location)).toStrictEqual({
          origin: SITE, error: "invalid_request", error_code: "validation_failed", error_description: "SAML Assertion has already been used"
        })
        expect(yield* countRows(email)).toStrictEqual({ users: 1, identities: 1, sessions: 1 })
        const sql = yield* SqlClient.SqlClient
        const [kept] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM auth.saml_used_assertions WHERE expires_at > now()`
        expect(kept!.n).toBeGreaterThan(0)
      })))

    it.scoped("an assertion used at one instance is refused at another on the same database", () =>
      expectingErrors(Effect.gen(function*() {
        const first = yield* ServerUrl
        const second = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV))), ServerUrl)
        expect(second).not.toBe(first)
        const { idp } = yield* provider(first)
        const email = `two-${randomUUID().slice(0, 6)}@example.org`
        const response = idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email })
        expect((yield* postAcs(first, { SAMLResponse: response })).status).toBe(302)
        const again = yield* postAcs(second, { SAMLResponse: response })
        expect(refusal(again.location)).toMatchObject({ error_code: "validation_failed", error_description: "SAML Assertion has already been used" })
        expect(yield* countRows(email)).toStrictEqual({ users: 1, identities: 1, sessions: 1 })
      })))

    it.effect("SSO accounts never join other accounts: a password user and two providers' users with one email stay three users", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = `shared-${randomUUID().slice(0, 6)}@example.org`
        const password = yield* admin(url, "/admin/users", "POST", { email, password: "Corr3ct-Horse-Battery", email_confirm: true })
        expect(password.status, password.text).toBe(200)
        const subjects: Array<string> = []
        for (let i = 0; i < 2; i++) {
          const { idp } = yield* provider(url)
          const posted = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email }) })
          expect(posted.status, posted.location).toBe(302)
          subjects.push(decodeJwt(new URLSearchParams(new URL(posted.location).hash.slice(1)).get("access_token")!).payload["sub"] as string)
        }
        expect(new Set([password.json.id, ...subjects]).size).toBe(3)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ is_sso_user: boolean; n: number }>`SELECT is_sso_user, count(*)::int AS n FROM auth.users WHERE email = ${email} GROUP BY is_sso_user ORDER BY is_sso_user`
        expect(rows).toStrictEqual([{ is_sso_user: false, n: 1 }, { is_sso_user: true, n: 2 }])
        // The password user still signs in with the password, as before.
        const signIn = yield* raw(url, "/token?grant_type=password", { body: { email, password: "Corr3ct-Horse-Battery" } })
        expect([signIn.status, signIn.json.user.id]).toStrictEqual([200, password.json.id])
      }))

    it.effect("a banned SSO user is refused with access_denied, and gets no session", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { idp } = yield* provider(url)
        const email = `banned-${randomUUID().slice(0, 6)}@example.org`
        const first = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email }) })
        const userId = decodeJwt(new URLSearchParams(new URL(first.location).hash.slice(1)).get("access_token")!).payload["sub"] as string
        expect((yield* admin(url, `/admin/users/${userId}`, "PUT", { ban_duration: "24h" })).status).toBe(200)
        const refused = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email }) })
        expect(refusal(refused.location)).toMatchObject({ error: "access_denied", error_code: "user_banned" })
        // The ban ended the first session; the refused sign-in started none.
        expect((yield* countRows(email)).sessions).toBe(0)
      })))

    it.effect("one response posted twice at the same time signs in once", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { idp } = yield* provider(url)
        const email = `race-${randomUUID().slice(0, 6)}@example.org`
        const response = idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email })
        const posted = yield* Effect.all(Array.from({ length: 4 }, () => postAcs(url, { SAMLResponse: response })), { concurrency: "unbounded" })
        expect(posted.map((answer) => answer.status).sort()).toStrictEqual([302, 303, 303, 303])
        expect(yield* countRows(email)).toStrictEqual({ users: 1, identities: 1, sessions: 1 })
      })))

    it.effect("an IdP-initiated response (no RelayState) signs in once; an unknown issuer and a bad RelayState are refused", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { idp } = yield* provider(url)
        const email = `idp-init-${randomUUID().slice(0, 6)}@example.org`
        const response = idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email })
        const first = yield* postAcs(url, { SAMLResponse: response, RelayState: `${SITE}/from-idp` })
        expect(first.status).toBe(302)
        expect(first.location.startsWith(`${SITE}/from-idp#access_token=`)).toBe(true)
        const stranger = newIdp()
        const unknown = yield* postAcs(url, { SAMLResponse: stranger.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS }) })
        expect(refusal(unknown.location)).toMatchObject({ error: "server_error", error_code: "saml_idp_not_found" })
        const badRelay = yield* postAcs(url, { SAMLResponse: response, RelayState: "not a url" })
        expect(refusal(badRelay.location)).toMatchObject({ error_code: "validation_failed", error_description: "SAML RelayState is not a valid UUID or URL" })
        const garbage = yield* postAcs(url, { SAMLResponse: "%%%" })
        expect(refusal(garbage.location)).toMatchObject({ error_code: "validation_failed", error_description: "SAMLResponse is not a valid Base64 string" })
        const unknownRelay = yield* postAcs(url, { SAMLResponse: response, RelayState: randomUUID() })
        expect(refusal(unknownRelay.location)).toMatchObject({ error_code: "saml_relay_state_not_found" })
        // A RelayState URL off the allow-list lands on SITE_URL.
        const offList = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email }), RelayState: "https://evil.example.net/x" })
        expect([offList.status, offList.location.startsWith(`${SITE}/#access_token=`)]).toStrictEqual([302, true])
      })))

    it.effect("an IdP-initiated response whose bearer SubjectConfirmation expired is refused (node-saml checks it only with InResponseTo)", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { idp } = yield* provider(url)
        const email = `late-${randomUUID().slice(0, 6)}@example.org`
        const posted = yield* postAcs(url, {
          SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: email, subjectNotOnOrAfter: new Date(Date.now() - 4 * 60_000) })
        })
        expect(refusal(posted.location)).toMatchObject({ error_code: "validation_failed", error_description: "SAML Assertion is not valid" })
        expect(yield* countRows(email)).toStrictEqual({ users: 0, identities: 0, sessions: 0 })
      })))

    it.effect("a signed email or user id longer than the database holds is refused with a redirect, never a 500", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const { idp } = yield* provider(url)
        const longEmail = `${"e".repeat(250)}@example.org`
        const tooLongEmail = yield* postAcs(url, { SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: longEmail }) })
        expect(refusal(tooLongEmail.location)).toMatchObject({
          error_code: "validation_failed", error_description: "SAML Assertion email address is longer than 255 characters"
        })
        const tooLongSubject = yield* postAcs(url, {
          SAMLResponse: idp.response({
            spEntityId: SP_ENTITY_ID, acsUrl: ACS, nameId: "p".repeat(3000), nameIdFormat: PERSISTENT_FORMAT, attributes: { email: ["long-id@example.org"] }
          })
        })
        expect(refusal(tooLongSubject.location)).toMatchObject({
          error_code: "validation_failed", error_description: "SAML Assertion user identifier is longer than 512 characters"
        })
        expect(yield* countRows("long-id@example.org")).toStrictEqual({ users: 0, identities: 0, sessions: 0 })
      })))

    it.effect("rows written to GoTrue's SSO tables hold no NULL GoTrue cannot scan (the way back)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { id, idp } = yield* provider(url)
        yield* begin(url, id)
        const request = idp.readRequest(yield* begin(url, id))
        const posted = yield* postAcs(url, {
          SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: `wayback-${randomUUID().slice(0, 6)}@example.org` }),
          RelayState: request.relayState
        })
        expect(posted.status).toBe(302)
        const sql = yield* SqlClient.SqlClient
        const tables = GOTRUE_READABLE.filter((t) => ["sso_providers", "sso_domains", "saml_providers", "saml_relay_states"].includes(t.table))
        expect(tables).toHaveLength(4)
        for (const table of tables) {
          for (const { column } of table.required) {
            const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(`auth.${table.table}`)} WHERE ${sql(column)} IS NULL`
            expect([table.table, column, row!.n]).toStrictEqual([table.table, column, 0])
          }
        }
        const [relays] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM auth.saml_relay_states WHERE sso_provider_id = ${id}`
        expect(relays!.n).toBe(1)
      }))

    it.effect("malformed input is a 4xx, never a 500", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const statuses: Array<readonly [string, number]> = []
        const note = (label: string, status: number) => statuses.push([label, status])
        note("sso: provider_id a number", (yield* raw(url, "/sso", { body: { provider_id: 42 } })).status)
        note("sso: not JSON", (yield* raw(url, "/sso", { body: "{nope" })).status)
        note("sso: provider_id not a uuid", (yield* raw(url, "/sso", { body: { provider_id: "nope" } })).status)
        note("acs: JSON body", (yield* postAcs(url, {}).pipe(Effect.zipRight(raw(url, "/sso/saml/acs", { body: { SAMLResponse: 1 } })))).status)
        note("acs: empty form", (yield* postAcs(url, {})).status)
        note("acs: not a Response", (yield* postAcs(url, { SAMLResponse: Buffer.from("<x/>").toString("base64") })).status)
        note("admin: domains a string", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", domains: "x" })).status)
        note("admin: attribute_mapping wrong", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", metadata_xml: newIdp().metadata(), attribute_mapping: { keys: { a: { name: 1 } } } })).status)
        note("admin: bad UTF-8 metadata", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", metadata_xml: "\ud800" })).status)
        note("admin: an entity ID with a NUL reference", (yield* admin(url, "/admin/sso/providers", "POST", {
          type: "saml", metadata_xml: newIdp().metadata().replace(/entityID="([^"]*)"/, "entityID=\"$1&#0;\"")
        })).status)
        note("admin: an empty domain", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", metadata_xml: newIdp().metadata(), domains: [""] })).status)
        note("admin: NUL in attribute_mapping", (yield* admin(url, "/admin/sso/providers", "POST", {
          type: "saml", metadata_xml: newIdp().metadata(), attribute_mapping: { keys: { team: { name: "t", default: "a\u0000b" } } }
        })).status)
        // Text that does not compress past a unique index's 2704 bytes (GoTrue's 500).
        const incompressible = randomBytes(3000).toString("base64")
        note("admin: a long domain", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", metadata_xml: newIdp().metadata(), domains: [incompressible] })).status)
        note("admin: a long resource_id", (yield* admin(url, "/admin/sso/providers", "POST", { type: "saml", metadata_xml: newIdp().metadata(), resource_id: incompressible })).status)
        note("admin: a long entity ID", (yield* admin(url, "/admin/sso/providers", "POST", {
          type: "saml", metadata_xml: new SamlTestIdp(`https://idp.example.org/${incompressible}`, "https://idp.example.org/sso").metadata()
        })).status)
        const { id } = yield* provider(url)
        note("admin: a long domain on update", (yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { domains: [incompressible] })).status)
        note("admin: a long resource_id on update", (yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { resource_id: incompressible })).status)
        note("admin: an empty domain on update", (yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { domains: ["x.example", ""] })).status)
        const issuerWithNul = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><saml:Issuer>a&#x0;b</saml:Issuer></samlp:Response>`
        note("acs: an Issuer with a NUL reference", (yield* postAcs(url, { SAMLResponse: Buffer.from(issuerWithNul).toString("base64") })).status)
        for (const [label, status] of statuses) expect([label, status >= 400 && status < 500 || status === 303]).toStrictEqual([label, true])
        // Refused as the admin's input (400), not as a conflict the database found (422).
        for (const [label, status] of statuses.filter(([label]) => label.startsWith("admin: a long"))) expect([label, status]).toStrictEqual([label, 400])
        const [written] = yield* (yield* SqlClient.SqlClient)<{ n: number }>`SELECT count(*)::int AS n FROM auth.sso_domains WHERE sso_provider_id = ${id}`
        expect(written!.n).toBe(1)
      }))

    it.effect("admin CRUD: create, get (by id and resource_), list without metadata_xml, PUT semantics, delete; GoTrue's errors", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const idp = newIdp()
        const resource = `res-${randomUUID().slice(0, 8)}`
        const domain = `crud-${randomUUID().slice(0, 8)}.example.com`
        const created = yield* admin(url, "/admin/sso/providers", "POST", {
          type: "saml", metadata_xml: idp.metadata(), domains: [domain], resource_id: resource,
          attribute_mapping: { keys: { email: { name: "mail" } } }, name_id_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
        })
        expect(created.status).toBe(201)
        expect(created.json).toMatchObject({
          resource_id: resource, disabled: null, domains: [{ domain }],
          saml: { entity_id: idp.entityId, attribute_mapping: { keys: { email: { name: "mail" } } }, name_id_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" }
        })
        const id = created.json.id as string
        expect((yield* admin(url, `/admin/sso/providers/${id}`, "GET")).json.saml.metadata_xml).toBe(idp.metadata())
        expect((yield* admin(url, `/admin/sso/providers/resource_${resource}`, "GET")).json.id).toBe(id)
        const listed = yield* admin(url, `/admin/sso/providers?resource_id=${resource}`, "GET")
        expect(listed.json.items).toHaveLength(1)
        expect(listed.json.items[0].saml.metadata_xml).toBeUndefined()

        const updated = yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { domains: [`a.${domain}`, `b.${domain}`] })
        expect(updated.status).toBe(200)
        expect(updated.json.domains).toStrictEqual([{ domain: `a.${domain}` }, { domain: `b.${domain}` }])
        // PUT without name_id_format clears it, as in GoTrue.
        expect(updated.json.saml.name_id_format).toBeUndefined()

        const errors: ReadonlyArray<readonly [unknown, number, string, string]> = [
          [{ type: "oidc", metadata_xml: idp.metadata() }, 400, "validation_failed", "Only 'saml' supported for SSO provider type"],
          [{ type: "saml" }, 400, "validation_failed", "Either metadata_xml or metadata_url must be set"],
          [{ type: "saml", metadata_xml: "x", metadata_url: "https://x" }, 400, "validation_failed", "Only one of metadata_xml or metadata_url needs to be set"],
          [{ type: "saml", metadata_url: "http://idp.example.com/m" }, 400, "validation_failed", "metadata_url is not a HTTPS URL"],
          [{ type: "saml", metadata_xml: idp.metadata() }, 422, "saml_idp_already_exists", `SAML Identity Provider with this EntityID (${idp.entityId}) already exists`],
          [{ type: "saml", metadata_xml: newIdp().metadata(), domains: [`A.${domain}`] }, 400, "sso_domain_already_exists",
            `SSO Domain 'a.${domain}' is already assigned to an SSO identity provider (${id})`],
          [{ type: "saml", metadata_xml: "<md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" entityID=\"x\"/>" }, 400, "validation_failed",
            "SAML Metadata does not contain any IDPSSODescriptor"],
          [{ type: "saml", metadata_xml: "<not xml" }, 400, "validation_failed", "SAML Metadata XML is not valid"],
          [{ type: "saml", metadata_xml: withoutRedirect(newIdp().metadata()) }, 400, "validation_failed", NO_SIGN_ON],
          [{ type: "saml", metadata_xml: newIdp().metadata().replace(/Location="[^"]*"/g, "Location=\"javascript:alert(1)\"") }, 400, "validation_failed", NO_SIGN_ON]
        ]
        for (const [body, status, code, msg] of errors) {
          const answer = yield* admin(url, "/admin/sso/providers", "POST", body)
          expect([answer.status, answer.json]).toStrictEqual([status, { code: status, error_code: code, msg }])
        }
        const postOnly = yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { metadata_xml: withoutRedirect(idp.metadata()) })
        expect([postOnly.status, postOnly.json]).toStrictEqual([400, { code: 400, error_code: "validation_failed", msg: NO_SIGN_ON }])
        const mismatch = yield* admin(url, `/admin/sso/providers/${id}`, "PUT", { metadata_xml: newIdp().metadata() })
        expect(mismatch.json).toMatchObject({ error_code: "saml_entity_id_mismatch" })
        expect((yield* admin(url, "/admin/sso/providers/not-a-uuid", "GET")).json).toStrictEqual({
          code: 404, error_code: "sso_provider_not_found", msg: "SSO Identity Provider not found"
        })
        const noAdmin = yield* raw(url, "/admin/sso/providers")
        expect(noAdmin.status).toBe(401)

        const removed = yield* admin(url, `/admin/sso/providers/${id}`, "DELETE")
        expect([removed.status, removed.json.id]).toStrictEqual([200, id])
        expect((yield* admin(url, `/admin/sso/providers/${id}`, "GET")).status).toBe(404)
        const sql = yield* SqlClient.SqlClient
        const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM auth.sso_domains WHERE sso_provider_id = ${id}`
        expect(left!.n).toBe(0)
      }))
  })
})

describe("SAML request limits", () => {
  acceptance({ AUTH_SAML_ENABLED: "true", AUTH_SAML_PRIVATE_KEY: spPrivateKeySetting(), AUTH_RATE_LIMIT_HEADER: "X-Client-IP", AUTH_SAML_RATE_LIMIT_ASSERTION: "1" })((it) => {
    it.effect("POST /sso and the ACS have buckets of their own per client (bursts of 30), answered 429", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const post = (path: string, body: unknown, client: string) => raw(url, path, { body, headers: { "x-client-ip": client } })
        for (let i = 0; i < 30; i++) expect((yield* post("/sso", { domain: "none.example" }, "10.0.0.1")).status).toBe(404)
        expect((yield* post("/sso", { domain: "none.example" }, "10.0.0.1")).json).toMatchObject({ error_code: "over_request_rate_limit" })
        expect((yield* post("/sso", { domain: "none.example" }, "10.0.0.2")).status).toBe(404)
        const acs = (client: string) =>
          call(() => fetch(`${url}/sso/saml/acs`, {
            method: "POST", redirect: "manual",
            headers: { "content-type": "application/x-www-form-urlencoded", "x-client-ip": client }, body: "SAMLResponse="
          }))
        for (let i = 0; i < 30; i++) expect((yield* acs("10.0.0.1")).status).toBe(303)
        expect((yield* acs("10.0.0.1")).status).toBe(429)
      }))
  })
})

describe("SAML encrypted assertions", () => {
  acceptance({
    ...ENV,
    AUTH_SAML_ALLOW_ENCRYPTED_ASSERTIONS: "true",
    AUTH_SAML_PRIVATE_KEY_NEXT: spPrivateKeySetting()
  })((it) => {
    it.effect("the metadata offers both keys for encryption; an assertion encrypted for either signs in", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const metadata = yield* raw(url, "/sso/saml/metadata")
        expect(metadata.headers.get("cache-control")).toBe("public, max-age=60")
        const encryption = [...metadata.text.matchAll(/<KeyDescriptor use="encryption">.*?<X509Certificate>([^<]+)</g)].map((match) => match[1]!)
        expect(encryption).toHaveLength(2)
        expect((yield* raw(url, "/settings")).json).toMatchObject({ saml_enabled: true, saml_private_key_next_configured: true })
        const { id, idp } = yield* provider(url)
        for (const certificate of encryption) {
          const request = idp.readRequest(yield* begin(url, id))
          const email = `sealed-${randomUUID().slice(0, 6)}@example.org`
          const posted = yield* postAcs(url, {
            SAMLResponse: yield* call(() => idp.encryptedResponse({ spEntityId: SP_ENTITY_ID, request, nameId: email }, certificate)),
            RelayState: request.relayState
          })
          expect(posted.status, posted.location).toBe(302)
          expect(decodeJwt(new URLSearchParams(new URL(posted.location).hash.slice(1)).get("access_token")!).payload["email"]).toBe(email)
        }
      }))
  })
})

describe("SAML switched off", () => {
  acceptance({})((it) => {
    it.effect("every /sso route is 404 saml_provider_disabled; the admin routes are served", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        for (const [path, body] of [["/sso", { domain: "x.example" }], ["/sso/saml/acs", "SAMLResponse=x"], ["/sso/saml/metadata", undefined]] as const) {
          const answer = yield* raw(url, path, body === undefined ? {} : { body, ...(typeof body === "string" ? { headers: { "content-type": "application/x-www-form-urlencoded" } } : {}) })
          expect([answer.status, answer.json]).toStrictEqual([404, { code: 404, error_code: "saml_provider_disabled", msg: "SAML 2.0 is disabled" }])
        }
        const listed = yield* admin(url, "/admin/sso/providers", "GET")
        expect([listed.status, listed.json]).toStrictEqual([200, { items: [] }])
        const settings = yield* raw(url, "/settings")
        expect(settings.json).toMatchObject({ saml_enabled: false })
      }))
  })
})
