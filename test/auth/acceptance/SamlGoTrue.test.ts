/**
 * SAML between GoTrue v2.196 and Gatehouse on one database (shared/fixtures/gotrue-v2.196): a provider Gatehouse
 * created and a user it signed in through SAML are read by the real GoTrue binary (its admin API, POST /sso, and a
 * sign-in at its ACS that finds the same user), and a provider GoTrue created signs in at Gatehouse. Both servers
 * hold the same SAML_PRIVATE_KEY, as a switch keeps it, and publish the same certificate for it.
 *
 * PostgreSQL only, and only where the GoTrue binary is (GOTRUE_BIN, else /tmp/gotrue/auth); skipped elsewhere.
 */
import { describe, expect, layer } from "@effect/vitest"
import { createPrivateKey, randomUUID } from "node:crypto"
import { spCertificate } from "../../../src/auth/domain/SamlCertificate.js"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { gotrueFixtureMissing, gotrueManifest, loadGoTrueFixture } from "../../support/GoTrueFixture.js"
import { realGoTrueMissing, startGoTrue } from "../../support/RealGoTrue.js"
import { SamlTestIdp, spPrivateKeySetting } from "../../support/SamlTestIdp.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import { decodeJwt, nowSeconds, postAcs, raw, signHs256 } from "./AcceptanceKit.js"

const manifest = gotrueManifest
const skipped = Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined || realGoTrueMissing !== undefined

const SITE = "http://localhost:3000"
const KEY = spPrivateKeySetting()
const ENV = {
  AUTH_JWT_SECRET: manifest?.jwt_secret ?? "",
  AUTH_SITE_URL: SITE,
  AUTH_SAML_ENABLED: "true",
  AUTH_SAML_PRIVATE_KEY: KEY
}
const GATEHOUSE_SP = "http://localhost:9999/sso/saml/metadata"

class FixtureUrl extends Context.Tag("test/FixtureUrl")<FixtureUrl, string>() {}

const OverFixture = Layer.unwrapScoped(
  Effect.map(loadGoTrueFixture(Option.getOrElse(externalDatabaseUrl, () => "")), ({ url }) =>
    Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(ENV).db.namespace }))).pipe(
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
      Layer.provideMerge(Layer.succeed(FixtureUrl, url))
    ))
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

const serviceKey = () => signHs256({ iss: "supabase", role: "service_role", iat: nowSeconds(), exp: nowSeconds() + 3600 }, manifest.jwt_secret)

const tag = randomUUID().slice(0, 8)
const atGatehouse = new SamlTestIdp(`https://gh-idp-${tag}.example.org/metadata`, `https://gh-idp-${tag}.example.org/sso`)
const atGoTrue = new SamlTestIdp(`https://gt-idp-${tag}.example.org/metadata`, `https://gt-idp-${tag}.example.org/sso`)
const made = { providerId: "", userId: "", email: `saml-${tag}@corp-${tag}.example.com`, gotrueProviderId: "", gotrueDomain: `gt-${tag}.example.com` }


/** POST /sso at a server, the IdP's answer to the request it leads to, posted to that server's ACS: the access token. */
const signIn = (url: string, idp: SamlTestIdp, body: Record<string, string>, spEntityId: string) =>
  Effect.gen(function*() {
    const started = yield* raw(url, "/sso", { body: { ...body, skip_http_redirect: true } })
    expect(started.status, started.text).toBe(200)
    const request = idp.readRequest(started.json.url)
    const posted = yield* postAcs(url, {
      SAMLResponse: idp.response({ spEntityId, request, nameId: made.email }),
      RelayState: request.relayState
    })
    expect([posted.status, posted.location.includes("#access_token=")], posted.location).toStrictEqual([302, true])
    return decodeJwt(new URLSearchParams(new URL(posted.location).hash.slice(1)).get("access_token")!).payload
  })

describe.skipIf(skipped)("SAML between GoTrue v2.196 and Gatehouse on one database", () => {
  layer(OverFixture, { timeout: 300_000, excludeTestServices: true })((it) => {
    it.effect("at Gatehouse: a provider is created and a user signs in through it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const created = yield* raw(url, "/admin/sso/providers", {
          method: "POST", bearer: serviceKey(), body: { type: "saml", metadata_xml: atGatehouse.metadata(), domains: [`corp-${tag}.example.com`] }
        })
        expect(created.status, created.text).toBe(201)
        made.providerId = created.json.id
        const claims = yield* signIn(url, atGatehouse, { provider_id: made.providerId }, GATEHOUSE_SP)
        made.userId = claims["sub"] as string
      }).pipe(Effect.provide(TestServerOver(ENV))), { timeout: 120_000 })

    it.effect("at GoTrue: Gatehouse's provider reads back, the SSO user signs in as the same user, and GoTrue makes a provider", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startGoTrue(yield* FixtureUrl, {
          GOTRUE_SITE_URL: SITE,
          GOTRUE_JWT_SECRET: manifest.jwt_secret,
          GOTRUE_JWT_EXP: "3600",
          GOTRUE_JWT_AUD: "authenticated",
          GOTRUE_JWT_DEFAULT_GROUP_NAME: "authenticated",
          GOTRUE_JWT_ADMIN_ROLES: "service_role,supabase_admin",
          GOTRUE_SAML_ENABLED: "true",
          GOTRUE_SAML_PRIVATE_KEY: KEY
        })
        // GoTrue's SP certificate for the shared key is, byte for byte, the one Gatehouse derives for that host: an IdP
        // that pinned GoTrue's certificate keeps trusting the SP after the switch.
        const metadata = (yield* raw(url, "/sso/saml/metadata")).text
        const theirs = /X509Certificate[^>]*>([^<]+)</.exec(metadata)![1]!.replace(/\s+/g, "")
        const key = createPrivateKey({ key: Buffer.from(KEY, "base64"), format: "der", type: "pkcs1" })
        expect(spCertificate(key, new URL(url).hostname, false).toString("base64")).toBe(theirs)
        const read = yield* raw(url, `/admin/sso/providers/${made.providerId}`, { bearer: serviceKey() })
        expect(read.status, read.text).toBe(200)
        expect(read.json).toMatchObject({
          id: made.providerId,
          saml: { entity_id: atGatehouse.entityId, metadata_xml: atGatehouse.metadata(), attribute_mapping: {} },
          domains: [{ domain: `corp-${tag}.example.com` }]
        })
        const claims = yield* signIn(url, atGatehouse, { domain: `corp-${tag}.example.com` }, `${url}/sso/saml/metadata`)
        expect(claims).toMatchObject({ sub: made.userId, email: made.email })

        const created = yield* raw(url, "/admin/sso/providers", {
          method: "POST", bearer: serviceKey(), body: { type: "saml", metadata_xml: atGoTrue.metadata(), domains: [made.gotrueDomain] }
        })
        expect(created.status, created.text).toBe(201)
        made.gotrueProviderId = created.json.id
      })), { timeout: 120_000 })

    it.effect("back at Gatehouse: GoTrue's provider is listed and signs in; the first user is still the same", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const listed = yield* raw(url, "/admin/sso/providers", { bearer: serviceKey() })
        expect(listed.json.items.map((item: { id: string }) => item.id)).toEqual(expect.arrayContaining([made.providerId, made.gotrueProviderId]))
        const again = yield* signIn(url, atGatehouse, { provider_id: made.providerId }, GATEHOUSE_SP)
        expect(again["sub"]).toBe(made.userId)
        const claims = yield* signIn(url, atGoTrue, { domain: made.gotrueDomain }, GATEHOUSE_SP)
        expect(claims).toMatchObject({ email: made.email, app_metadata: { provider: `sso:${made.gotrueProviderId}` } })
        expect(claims["sub"]).not.toBe(made.userId)
      }).pipe(Effect.provide(TestServerOver(ENV))), { timeout: 120_000 })
  })
})
