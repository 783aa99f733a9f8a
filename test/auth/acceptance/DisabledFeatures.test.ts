/**
 * What auth-js gets from features that are off, as GoTrue answers with them off: Web3 sign-in (both chains off, the
 * default) is a 422 web3_provider_disabled after the Web3 limiter, and every SAML route a 404 saml_provider_disabled before anything
 * else. /settings names the email autoconfirm both as GoTrue does and as the spec's Settings object does.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, legacyError, raw, refusals, versionedError } from "./AcceptanceKit.js"

const HEADER = "x-client-ip"

describe("features that are off", () => {
  acceptance({ AUTH_RATE_LIMIT_HEADER: HEADER, AUTH_RATE_LIMIT_WEB3: "1" })((it) => {
    it.effect("signInWithWeb3 (message and signature) gets 422 web3_provider_disabled, whatever the chain", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url, { headers: { [HEADER]: "203.0.113.1" } })
        const { data, error } = yield* call(() =>
          client.signInWithWeb3({ chain: "ethereum", message: "example.com wants you to sign in", signature: "0x00" })
        )
        expect(data.session).toBeNull()
        expect(error).toMatchObject({ status: 422, code: "web3_provider_disabled", message: "Web3 provider is disabled" })
        for (const chain of ["solana", "bitcoin"]) {
          const answer = yield* raw(url, "/token?grant_type=web3", {
            body: { chain, message: "m", signature: "s" },
            headers: { [HEADER]: `203.0.113.${chain.length}` }
          })
          expect([answer.status, answer.json]).toEqual([422, legacyError(422, "web3_provider_disabled", "Web3 provider is disabled")])
          expect(answer.headers.get("x-sb-error-code")).toBe("web3_provider_disabled")
        }
      }))

    it.effect("the Web3 grant is counted by RATE_LIMIT_WEB3, in a bucket of its own", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const before = yield* refusals("web3")
        const web3 = () => raw(url, "/token?grant_type=web3", { body: {}, headers: { [HEADER]: "198.51.100.7" } })
        // GoTrue's burst of 30, then one per five minutes (RATE_LIMIT_WEB3=1): nothing refills during the test.
        for (let i = 0; i < 30; i++) expect((yield* web3()).status).toBe(422)
        const over = yield* web3()
        expect([over.status, over.json?.error_code]).toEqual([429, "over_request_rate_limit"])
        expect(yield* refusals("web3")).toBe(before + 1)
        // The password grant of the same client has its own bucket: it is refused for its credentials, not its rate.
        const password = yield* raw(url, "/token?grant_type=password", {
          body: { email: "nobody@example.com", password: "x" },
          headers: { [HEADER]: "198.51.100.7" }
        })
        expect([password.status, password.json?.error_code]).toEqual([400, "invalid_credentials"])
      }))

    it.effect("signInWithSSO gets 404 saml_provider_disabled; so do the SAML metadata and ACS routes, whatever they are sent", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        for (const params of [{ domain: "example.com" }, { providerId: "6f1b7c1e-3f0a-4a55-9a53-2d1f0c7a9b10" }]) {
          const { data, error } = yield* call(() => client.signInWithSSO(params))
          expect(data).toBeNull()
          expect(error).toMatchObject({ status: 404, code: "saml_provider_disabled", message: "SAML 2.0 is disabled" })
        }
        const disabled = legacyError(404, "saml_provider_disabled", "SAML 2.0 is disabled")
        for (const [method, path, body] of [
          ["GET", "/sso/saml/metadata", undefined],
          ["GET", "/sso/saml/metadata?download=true", undefined],
          ["POST", "/sso/saml/acs", "SAMLResponse=PHNhbWxwOlJlc3BvbnNlLz4%3D&RelayState=x"],
          ["POST", "/sso", "{not json"],
          ["POST", "/auth/v1/sso", { domain: "example.com" }]
        ] as const) {
          const answer = yield* raw(url, path, {
            method,
            ...(body === undefined ? {} : { body }),
            ...(typeof body === "string" && body.startsWith("SAML") ? { headers: { "content-type": "application/x-www-form-urlencoded" } } : {})
          })
          expect([path, answer.status, answer.json]).toEqual([path, 404, disabled])
        }
        const versioned = yield* raw(url, "/sso", { body: { domain: "example.com" }, apiVersion: true })
        expect([versioned.status, versioned.json]).toEqual([404, versionedError("saml_provider_disabled", "SAML 2.0 is disabled")])
      }))

    it.effect("/settings carries autoconfirm beside mailer_autoconfirm, with the same value", () =>
      Effect.gen(function*() {
        const settings = yield* raw(yield* ServerUrl, "/settings")
        expect(settings.json).toMatchObject({ autoconfirm: false, mailer_autoconfirm: false })
      }))
  })

  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("with MAILER_AUTOCONFIRM on, /settings says autoconfirm: true", () =>
      Effect.gen(function*() {
        const settings = yield* raw(yield* ServerUrl, "/settings")
        expect(settings.json).toMatchObject({ autoconfirm: true, mailer_autoconfirm: true })
      }))
  })
})
