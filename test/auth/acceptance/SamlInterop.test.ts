/**
 * SAML interoperability with a stack nobody here wrote: samlify 2.13 in its identity-provider role reads Gatehouse's
 * served SP metadata, verifies the signed HTTP-Redirect AuthnRequest auth-js's signInWithSSO leads to (with the
 * certificate from that metadata), and answers with its own signed login response, which Gatehouse accepts.
 */
import { describe, expect } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { createRequire } from "node:module"
import { Effect } from "effect"
import { newSigner, spPrivateKeySetting } from "../../support/SamlTestIdp.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, decodeJwt, postAcs, raw } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
const EMAIL_FORMAT = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"

/**
 * samlify, loaded untyped: its declarations pull the browser DOM library (through @xmldom) into the whole program,
 * which changes the types of Headers and fetch everywhere. The little this test calls is described here.
 */
interface FlowResult {
  readonly extract: { readonly request: { readonly id: string } }
}
interface SamlifyIdp {
  getMetadata(): string
  parseLoginRequest(sp: unknown, binding: string, req: { query: Record<string, string>; octetString: string }): Promise<FlowResult>
  createLoginResponse(sp: unknown, request: FlowResult, binding: string, user: Record<string, string>, options: { relayState: string }): Promise<{ context: string }>
}
const samlify = createRequire(import.meta.url)("samlify") as {
  setSchemaValidator(validator: { validate: (xml: string) => Promise<string> }): void
  IdentityProvider(settings: Record<string, unknown>): SamlifyIdp
  ServiceProvider(settings: { metadata: string }): unknown
}

// samlify refuses to run without an XML schema validator; its schema check of Gatehouse's AuthnRequest is not what
// this test is about (the request's signature is), so a permissive one is set.
samlify.setSchemaValidator({ validate: async () => "skipped" })

describe("SAML with samlify as the identity provider", () => {
  acceptance({ AUTH_SITE_URL: SITE, AUTH_SAML_ENABLED: "true", AUTH_SAML_PRIVATE_KEY: spPrivateKeySetting() })((it) => {
    it.effect("samlify verifies the signed AuthnRequest against the served metadata and its response signs the user in", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const signer = newSigner()
        const tag = randomUUID().slice(0, 8)
        const ssoUrl = `https://samlify-${tag}.example.org/sso`
        const idp = samlify.IdentityProvider({
          entityID: `https://samlify-${tag}.example.org/metadata`,
          signingCert: `-----BEGIN CERTIFICATE-----\n${signer.certificate}\n-----END CERTIFICATE-----`,
          privateKey: signer.pem,
          nameIDFormat: [EMAIL_FORMAT],
          singleSignOnService: [{ Binding: REDIRECT, Location: ssoUrl }],
          wantAuthnRequestsSigned: true
        })
        const spMetadata = (yield* raw(url, "/sso/saml/metadata")).text
        const sp = samlify.ServiceProvider({ metadata: spMetadata })

        const domain = `samlify-${tag}.example.com`
        const created = yield* raw(url, "/admin/sso/providers", {
          method: "POST",
          bearer: adminJwt(),
          body: { type: "saml", metadata_xml: idp.getMetadata(), domains: [domain] }
        })
        expect(created.status, created.text).toBe(201)

        const { client } = authClient(url, { flowType: "pkce" })
        const started = yield* call(() => client.signInWithSSO({ domain }))
        expect(started.error).toBeNull()
        const redirect = new URL(started.data!.url)
        expect(`${redirect.origin}${redirect.pathname}`).toBe(ssoUrl)
        const query = Object.fromEntries(redirect.searchParams)
        const octetString = redirect.search.slice(1).split("&").filter((pair) => !pair.startsWith("Signature=")).join("&")
        const parsed = yield* call(() => idp.parseLoginRequest(sp, "redirect", { query, octetString }))
        expect(parsed.extract.request.id).toMatch(/^id-[0-9a-f]{40}$/)

        // A forged signature is caught by samlify: the AuthnRequest really is signed with the metadata's key.
        const forged = { ...query, Signature: Buffer.from("x".repeat(256)).toString("base64") }
        const refused = yield* Effect.either(Effect.tryPromise(() => idp.parseLoginRequest(sp, "redirect", { query: forged, octetString })))
        expect(refused._tag).toBe("Left")

        const email = `samlify-user-${tag}@${domain}`
        const response = yield* call(() => idp.createLoginResponse(sp, parsed, "post", { email }, { relayState: query["RelayState"]! }))
        const posted = yield* postAcs(url, { SAMLResponse: response.context, RelayState: query["RelayState"]! })
        expect(posted.status, posted.location).toBe(302)
        const code = new URL(posted.location).searchParams.get("code")!
        const session = yield* call(() => client.exchangeCodeForSession(code))
        expect(session.error).toBeNull()
        expect(session.data.user!.email).toBe(email)
        expect(decodeJwt(session.data.session!.access_token).payload).toMatchObject({ amr: [{ method: "sso/saml", provider: created.json.id }] })
      }))
  })
})
