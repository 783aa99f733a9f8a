/**
 * Web3 sign-in (POST /token?grant_type=web3) through auth-js's signInWithWeb3, with wallets over real keys: an
 * Ethereum wallet shim (eth_requestAccounts, personal_sign over secp256k1) and a Solana message signed with ed25519.
 * GoTrue's answers for every refusal, and what Gatehouse adds: a signed message is accepted once (also when two
 * posts of it race, or go to two servers over one database), and an Ethereum Expiration Time holds without a Not
 * Before.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { ServerUrl, TestServerOver } from "../../support/TestServer.js"
import { ethereumWallet, type MessageFields, signInMessage, solanaWallet } from "../../support/Web3Wallets.js"
import { acceptance, authClient, call, decodeJwt, legacyError, raw } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"

const ethereumMessage = (address: string, overrides: Partial<MessageFields> = {}) =>
  signInMessage("Ethereum", { domain: "app.example.com", address, uri: `${SITE}/login`, chainId: "1", issuedAt: new Date(), ...overrides })
const solanaMessage = (address: string, overrides: Partial<MessageFields> = {}) =>
  signInMessage("Solana", { domain: "app.example.com", address, uri: `${SITE}/login`, issuedAt: new Date(), ...overrides })

const ENV = {
  AUTH_SITE_URL: SITE,
  AUTH_URI_ALLOW_LIST: "http://localhost:*/**",
  AUTH_EXTERNAL_WEB3_ETHEREUM_ENABLED: "true",
  AUTH_EXTERNAL_WEB3_SOLANA_ENABLED: "true",
  AUTH_RATE_LIMIT_WEB3: "100000"
}

const post = (url: string, body: Record<string, unknown>) => raw(url, "/token?grant_type=web3", { body })
const invalidGrant = (description: string) => ({ error: "invalid_grant", error_description: description })

/** An EIP-1193 wallet as auth-js asks it: accounts, and personal_sign of the hex-encoded message. */
const eip1193 = (wallet: ReturnType<typeof ethereumWallet>) => ({
  request: async ({ method, params }: { method: string; params?: ReadonlyArray<unknown> }) => {
    if (method === "eth_requestAccounts") return [wallet.address]
    if (method === "eth_chainId") return "0x1"
    if (method === "personal_sign") return wallet.sign(Buffer.from(String(params![0]).slice(2), "hex").toString("utf8"))
    throw new Error(`unexpected ${method}`)
  }
})

describe("Web3 sign-in", () => {
  acceptance(ENV)((it) => {
    it.effect("an Ethereum wallet signs in through auth-js, makes a web3 user and identity, and finds it again", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = ethereumWallet()
        const { client } = authClient(url)
        const first = yield* call(() => client.signInWithWeb3({ chain: "ethereum", wallet: eip1193(wallet) as never, statement: "Welcome", options: { url: `${SITE}/login` } }))
        expect(first.error).toBeNull()
        const user = first.data.user!
        const providerId = `web3:ethereum:${wallet.address}`
        expect(user).toMatchObject({
          email: "", phone: "", app_metadata: { provider: "web3", providers: ["web3"] },
          user_metadata: { sub: providerId, custom_claims: { address: wallet.address, chain: "ethereum", network: "1", domain: "app.example.com", statement: "Welcome" } }
        })
        expect(user.email_confirmed_at).toBeUndefined()
        expect(user.identities).toHaveLength(1)
        expect(user.identities![0]).toMatchObject({ provider: "web3", id: providerId })
        expect(user.identities![0]!.identity_data).toStrictEqual({
          sub: providerId,
          custom_claims: { address: wallet.address, chain: "ethereum", network: "1", domain: "app.example.com", statement: "Welcome" },
          email_verified: false,
          phone_verified: false
        })
        const claims = decodeJwt(first.data.session!.access_token).payload
        expect(claims).toMatchObject({ aal: "aal1", amr: [{ method: "web3" }], sub: user.id })

        // A second sign-in (a new message) finds the same never-confirmed user; its refresh token works.
        const again = yield* call(() => client.signInWithWeb3({ chain: "ethereum", wallet: eip1193(wallet) as never, options: { url: `${SITE}/login` } }))
        expect(again.error).toBeNull()
        expect(again.data.user!.id).toBe(user.id)
        const refreshed = yield* call(() => client.refreshSession())
        expect(refreshed.error).toBeNull()

        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ provider: string; email: string | null }>`SELECT provider, email FROM auth.identities WHERE provider_id = ${providerId}`
        expect(rows).toStrictEqual([{ provider: "web3", email: null }])
        const audit = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM auth.audit_log_entries
          WHERE payload->>'actor_id' = ${user.id} AND payload->>'action' = 'login' AND payload->'traits'->>'chain' = 'ethereum'`
        expect(audit[0]!.n).toBe(2)
      }))

    it.effect("a Solana wallet signs in with a pre-signed message; the same message is refused the second time", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = solanaWallet()
        const message = solanaMessage(wallet.address, { chainId: "solana:mainnet" })
        const signature = wallet.signBytes(new TextEncoder().encode(message))
        const { client } = authClient(url)
        const first = yield* call(() => client.signInWithWeb3({ chain: "solana", message, signature }))
        expect(first.error).toBeNull()
        expect(first.data.user!.user_metadata).toMatchObject({ custom_claims: { address: wallet.address, chain: "solana", network: "solana:mainnet", statement: "" } })
        const replay = yield* call(() => client.signInWithWeb3({ chain: "solana", message, signature }))
        expect(replay.error).toMatchObject({ status: 400, message: "Signed Solana message was already used" })
        // Padded standard base64 of the same signature is the same message: still refused.
        const padded = yield* post(url, { chain: "solana", message, signature: Buffer.from(signature).toString("base64") })
        expect([padded.status, padded.json]).toEqual([400, invalidGrant("Signed Solana message was already used")])
      }))

    it.effect("two concurrent posts of one message: exactly one signs in", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = ethereumWallet()
        const message = ethereumMessage(wallet.address)
        const answers = yield* Effect.all([1, 2, 3].map(() => post(url, { chain: "ethereum", message, signature: wallet.sign(message) })), { concurrency: "unbounded" })
        expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400])
      }))

    it.scoped("a message spent at one server is refused by a second server over the same database, both ways at once too", () =>
      Effect.gen(function*() {
        const first = yield* ServerUrl
        const other = yield* Layer.build(Layer.fresh(TestServerOver(ENV)))
        const second = Context.get(other, ServerUrl)
        expect(second).not.toBe(first)
        const wallet = ethereumWallet()
        const message = ethereumMessage(wallet.address)
        const signature = wallet.sign(message)
        expect((yield* post(first, { chain: "ethereum", message, signature })).status).toBe(200)
        const replay = yield* post(second, { chain: "ethereum", message, signature })
        expect([replay.status, replay.json]).toEqual([400, invalidGrant("Signed Ethereum message was already used")])

        const racing = ethereumMessage(wallet.address, { statement: "race" })
        const racingSignature = wallet.sign(racing)
        const answers = yield* Effect.all(
          [first, second, first, second].map((url) => post(url, { chain: "ethereum", message: racing, signature: racingSignature })),
          { concurrency: "unbounded" }
        )
        expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400])
      }))

    it.effect("refuses a message for another domain or URI, expired, not yet valid or too old, with GoTrue's words", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = ethereumWallet()
        const now = Date.now()
        const cases: Array<[Partial<MessageFields>, string]> = [
          [{ domain: "evil.example.com" }, "Signed Ethereum message is using a Domain that does not match the one in URI which is not allowed on this server"],
          [{ domain: "evil.example.com", uri: "https://evil.example.com/" }, "Signed Ethereum message is using URI which is not allowed on this server, message was signed for another app"],
          [{ uri: "http://app.example.com/login" }, "Signed Ethereum message is using URI which does not use HTTPS"],
          // GoTrue would accept this one: its Expiration Time is only checked beside a Not Before.
          [{ issuedAt: new Date(now - 60_000), expirationTime: new Date(now - 1000) }, "Signed Ethereum message is expired"],
          [{ notBefore: new Date(now + 60_000), expirationTime: new Date(now + 120_000) }, "Signed Ethereum message becomes valid in the future"],
          [{ issuedAt: new Date(now - 11 * 60_000) }, "Ethereum message was issued too long ago"],
          [{ issuedAt: new Date(now + 11 * 60_000) }, "Ethereum message was issued too far in the future"]
        ]
        for (const [overrides, description] of cases) {
          const message = ethereumMessage(wallet.address, overrides)
          const answer = yield* post(url, { chain: "ethereum", message, signature: wallet.sign(message) })
          expect([answer.status, answer.json]).toEqual([400, invalidGrant(description)])
        }
        // A localhost URI (allowed by URI_ALLOW_LIST) is exempt from HTTPS and the domain comparison, as in GoTrue.
        const local = ethereumMessage(wallet.address, { uri: "http://localhost:5173/cb", domain: "localhost:5173" })
        expect((yield* post(url, { chain: "ethereum", message: local, signature: wallet.sign(local) })).status).toBe(200)
      }))

    it.effect("refuses a wrong signature, a malformed address and bad shapes with 400, never a 500", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = ethereumWallet()
        const message = ethereumMessage(wallet.address)
        const other = ethereumWallet().sign(message)
        const cases: Array<[Record<string, unknown>, unknown]> = [
          [{ chain: "ethereum", message, signature: other }, invalidGrant("Signature does not match address in message")],
          [{ chain: "ethereum", message, signature: "0x1234" }, legacyError(400, "validation_failed", "signature must be 65 bytes long, encoded as a 130 character-long hexadecimal string")],
          [{ chain: "ethereum", message: "too short", signature: other }, legacyError(400, "validation_failed", "message is too short")],
          [{ chain: "ethereum", message: "x".repeat(20 * 1024 + 1), signature: other }, legacyError(400, "validation_failed", "message must not exceed 20KB")],
          [{ chain: "ethereum", message: ethereumMessage("0xnot-an-address-at-all-0000000000000000000"), signature: other }, legacyError(400, "validation_failed", "siwe: wallet address is not a valid Ethereum address")],
          [{ chain: "bitcoin", message, signature: other }, legacyError(400, "web3_unsupported_chain", "Unsupported chain")]
        ]
        // A base58-looking address that is no 32-byte key: GoTrue panics (500); Gatehouse refuses the signature.
        const solana = solanaWallet()
        const badKey = solanaMessage("1111111111111111111111111111111111")
        cases.push(
          [{ chain: "solana", message: badKey, signature: solana.sign(badKey) }, invalidGrant("Signature does not match address in message")],
          [{ chain: "solana", message: badKey, signature: "short" }, legacyError(400, "validation_failed", "signature must be 64 bytes encoded as base64 with or without padding")],
          [{ chain: "solana", message: badKey, signature: "!".repeat(86) }, legacyError(400, "validation_failed", "signature does not contain valid base64 characters")]
        )
        for (const [body, expected] of cases) {
          const answer = yield* post(url, body)
          expect([answer.status, answer.json]).toEqual([400, expected])
        }
      }))
  })

  acceptance({ AUTH_EXTERNAL_WEB3_SOLANA_ENABLED: "true", AUTH_RATE_LIMIT_WEB3: "100000" })((it) => {
    it.effect("a chain that is off answers 422 web3_provider_disabled naming it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const wallet = ethereumWallet()
        const message = ethereumMessage(wallet.address)
        const { error } = yield* call(() => client.signInWithWeb3({ chain: "ethereum", message, signature: wallet.sign(message) as `0x${string}` }))
        expect(error).toMatchObject({ status: 422, code: "web3_provider_disabled", message: "Ethereum Web3 provider is disabled" })
        // /settings says which chain is on (Gatehouse's flags among the providers' switches).
        const settings = yield* raw(url, "/settings", { method: "GET" })
        expect(settings.json.external).toMatchObject({ web3_ethereum: false, web3_solana: true })
      }))
  })

  acceptance({ AUTH_SITE_URL: SITE, AUTH_EXTERNAL_WEB3_SOLANA_ENABLED: "true", AUTH_DISABLE_SIGNUP: "true", AUTH_RATE_LIMIT_WEB3: "100000" })((it) => {
    it.effect("with signups off a new wallet gets 422 signup_disabled, and its message stays unused", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const wallet = solanaWallet()
        const message = solanaMessage(wallet.address)
        const { error } = yield* call(() => authClient(url).client.signInWithWeb3({ chain: "solana", message, signature: wallet.signBytes(new TextEncoder().encode(message)) }))
        expect(error).toMatchObject({ status: 422, code: "signup_disabled", message: "Signups not allowed for this instance" })
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT 1 FROM auth.web3_used_messages`).toHaveLength(0)
      }))
  })
})
