/**
 * SAML providers given by an https metadata_url, served by a local TLS server (its self-signed certificate trusted
 * by this test process's fetch): the admin API fetches and parses it (GoTrue's error for a non-200), and the ACS
 * refreshes stale metadata (GoTrue's rule) before verifying, keeping the stored copy when the fetch fails. The IdP
 * rotating its signing key is the case that needs the refresh.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { generateKeyPairSync, randomUUID } from "node:crypto"
import { createServer } from "node:https"
import { Effect } from "effect"
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from "undici"
import { selfSignedCertificate } from "../../../src/auth/domain/SamlCertificate.js"
import { SamlTestIdp, spPrivateKeySetting } from "../../support/SamlTestIdp.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, expectingErrors, postAcs, raw } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const SP_ENTITY_ID = "http://localhost:9999/sso/saml/metadata"

/** A TLS server on localhost answering /metadata with whatever `served` holds. */
const metadataServer = Effect.acquireRelease(
  Effect.async<{ port: number; served: { status: number; body: string; endless: boolean }; close: () => void }>((resume) => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const der = selfSignedCertificate(privateKey, { commonName: "localhost", notBefore: new Date(0), notAfter: new Date("2100-01-01T00:00:00Z"), dnsNames: ["localhost"] })
    const cert = `-----BEGIN CERTIFICATE-----\n${der.toString("base64").match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----\n`
    const served = { status: 200, body: "", endless: false }
    const server = createServer({ key: privateKey.export({ type: "pkcs8", format: "pem" }), cert }, (_request, response) => {
      response.writeHead(served.status, { "content-type": "application/xml" })
      if (!served.endless) return response.end(served.body)
      // No content-length and no end: only the reader's own bound stops it.
      const chunk = Buffer.alloc(64 * 1024, "a")
      const more = () => {
        while (!response.destroyed && response.write(chunk));
      }
      response.on("drain", more)
      response.write("<md:EntityDescriptor>")
      more()
    })
    const previous = getGlobalDispatcher()
    setGlobalDispatcher(new Agent({ connect: { ca: cert } }))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resume(Effect.succeed({
        port: typeof address === "object" && address !== null ? address.port : 0,
        served,
        close: () => {
          setGlobalDispatcher(previous)
          server.close()
        }
      }))
    })
  }),
  ({ close }) => Effect.sync(close)
)


describe("SAML metadata_url", () => {
  acceptance({ AUTH_SITE_URL: SITE, AUTH_SAML_ENABLED: "true", AUTH_SAML_PRIVATE_KEY: spPrivateKeySetting() })((it) => {
    it.scoped("the admin API fetches the metadata; the ACS refreshes stale metadata (a rotated IdP key) and keeps its copy when the fetch fails", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const server = yield* metadataServer
        const metadataUrl = `https://localhost:${server.port}/metadata`
        const entity = `https://rotating-${randomUUID().slice(0, 8)}.example.org/metadata`
        const before = new SamlTestIdp(entity, "https://rotating.example.org/sso")
        const after = new SamlTestIdp(entity, "https://rotating.example.org/sso")
        // cacheDuration PT0S: stale as soon as it is stored, so every ACS post refreshes it.
        const stale = (idp: SamlTestIdp) => idp.metadata().replace("entityID=", "cacheDuration=\"PT0S\" entityID=")

        server.served.status = 404
        const refused = yield* raw(url, "/admin/sso/providers", { method: "POST", bearer: adminJwt(), body: { type: "saml", metadata_url: metadataUrl } })
        expect([refused.status, refused.json]).toStrictEqual([400, {
          code: 400, error_code: "saml_metadata_fetch_failed", msg: `HTTP 404 error fetching SAML Metadata from URL '${metadataUrl}'`
        }])

        // A body that never ends is cut at 1 MiB, well before the 10 s timeout.
        server.served.status = 200
        server.served.endless = true
        const startedAt = Date.now()
        const endless = yield* raw(url, "/admin/sso/providers", { method: "POST", bearer: adminJwt(), body: { type: "saml", metadata_url: metadataUrl } })
        expect([endless.status, endless.json]).toStrictEqual([400, { code: 400, error_code: "validation_failed", msg: "SAML Metadata is larger than 1 MiB" }])
        expect(Date.now() - startedAt).toBeLessThan(5_000)
        server.served.endless = false
        // A URL nobody answers is the admin's mistake: GoTrue's fetch-failure code, not a 500.
        const unreachable = yield* raw(url, "/admin/sso/providers", { method: "POST", bearer: adminJwt(), body: { type: "saml", metadata_url: "https://127.0.0.1:1/metadata" } })
        expect([unreachable.status, unreachable.json]).toStrictEqual([400, {
          code: 400, error_code: "saml_metadata_fetch_failed", msg: "Unable to fetch SAML Metadata from URL 'https://127.0.0.1:1/metadata'"
        }])

        server.served.body = stale(before)
        const created = yield* raw(url, "/admin/sso/providers", { method: "POST", bearer: adminJwt(), body: { type: "saml", metadata_url: metadataUrl } })
        expect(created.status, created.text).toBe(201)
        expect(created.json.saml).toMatchObject({ entity_id: entity, metadata_url: metadataUrl, metadata_xml: stale(before) })
        const id = created.json.id as string

        const signIn = (idp: SamlTestIdp) =>
          Effect.gen(function*() {
            const started = yield* raw(url, "/sso", { body: { provider_id: id, skip_http_redirect: true } })
            const request = idp.readRequest(started.json.url)
            return yield* postAcs(url, {
              SAMLResponse: idp.response({ spEntityId: SP_ENTITY_ID, request, nameId: `rot-${randomUUID().slice(0, 6)}@example.org` }),
              RelayState: request.relayState
            })
          })

        // The IdP rotated its key and publishes it: the ACS fetches the new metadata and the new signature verifies.
        server.served.body = stale(after)
        expect((yield* signIn(after)).status).toBe(302)
        const sql = yield* SqlClient.SqlClient
        const [stored] = yield* sql<{ metadata_xml: string }>`SELECT metadata_xml FROM auth.saml_providers WHERE sso_provider_id = ${id}`
        expect(stored!.metadata_xml).toBe(stale(after))

        // The metadata URL fails: the stored copy (the new key) is used, and the old key's signature is refused.
        server.served.status = 500
        expect((yield* signIn(after)).status).toBe(302)
        const old = yield* signIn(before)
        expect([old.status, new URL(old.location).searchParams.get("error_description")]).toStrictEqual([303, "SAML Assertion is not valid"])
      })))
  })
})
