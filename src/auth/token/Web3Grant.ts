import { createHash } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { lazyModule } from "../../platform/LazyModule.js"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { Session } from "../contract/Session.js"
import { AuthError } from "../domain/AuthError.js"
import { chainName, checkWeb3Message, web3MessageValidUntil } from "../domain/Web3Checks.js"
import { parseWeb3Message, type Web3Chain, type Web3Message, web3MessageSizeProblem } from "../domain/Web3Message.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { ExternalAccounts } from "../users/ExternalAccounts.js"
import { UniqueViolation } from "../users/UsersRepo.js"
import { Web3UsedMessagesRepo } from "./Web3UsedMessagesRepo.js"
import { traced } from "../../platform/Traced.js"

/**
 * The signature rules (noble's curves and keccak, base58), imported on the first Web3 sign-in of an enabled chain
 * rather than at start-up: most servers never enable Web3. A failure to load is a 500 with the reason logged.
 */
const web3Signatures = lazyModule("the Web3 signature rules", () => import("../domain/Web3Signatures.js"))

export interface Web3GrantRequest {
  readonly chain?: string | null | undefined
  readonly message?: string | null | undefined
  readonly signature?: string | null | undefined
}

/** GoTrue's identity_data for a wallet (its Claims struct as a map): no provider_id key, unlike other providers'. */
const identityData = (message: Web3Message, providerId: string): Record<string, unknown> => ({
  sub: providerId,
  custom_claims: {
    address: message.address,
    chain: message.chain,
    network: message.chainId,
    domain: message.domain,
    statement: message.statement
  },
  email_verified: false,
  phone_verified: false
})

const isLostRace = (defect: unknown): boolean => defect instanceof UniqueViolation || isUniqueViolation(defect)

/** What the used-message record is keyed on: the message, not its signature (one message has many signatures). */
const messageDigest = (chain: Web3Chain, message: string): Uint8Array =>
  new Uint8Array(createHash("sha256").update(`${chain}\n${message}`).digest())

/**
 * POST /token?grant_type=web3 (reference §5): a wallet's signed Sign-In-With-Ethereum (EIP-4361) or Sign-In-With-
 * Solana message, checked in GoTrue's order with GoTrue's answers, then the wallet's user signed in or made
 * (provider web3, no email) with a session whose amr is `web3`. Stronger than GoTrue: a message is accepted once
 * (recorded in the sign-in's transaction, so two instances or two concurrent posts cannot both use it), and an
 * Ethereum message's Expiration Time holds without a Not Before.
 */
export class Web3Grant extends Effect.Service<Web3Grant>()("auth/Web3Grant", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const accounts = yield* ExternalAccounts
    const tokens = yield* AccessTokens
    const used = yield* Web3UsedMessagesRepo
    const transactions = yield* Transactions
    const allowList = compileAllowList(config.uriAllowList)

    const signIn = traced("Web3Grant.signIn")(function*(request: Web3GrantRequest): Effect.fn.Return<Session, AuthError> {
      const { ethereum, solana } = config.web3
      if (!ethereum.enabled && !solana.enabled) return yield* AuthError.of(422, "web3_provider_disabled", "Web3 provider is disabled")
      const chain = request.chain ?? ""
      if (chain === "solana" && !solana.enabled) {
        return yield* AuthError.of(422, "web3_provider_disabled", "Solana Web3 provider is disabled")
      }
      if (chain === "ethereum" && !ethereum.enabled) {
        return yield* AuthError.of(422, "web3_provider_disabled", "Ethereum Web3 provider is disabled")
      }
      if (chain !== "ethereum" && chain !== "solana") return yield* AuthError.of(400, "web3_unsupported_chain", "Unsupported chain")
      const settings = config.web3[chain]
      const raw = request.message ?? ""
      const signature = request.signature ?? ""
      const sizeProblem = web3MessageSizeProblem(raw)
      if (sizeProblem !== undefined) return yield* AuthError.validation(sizeProblem)

      const { decodeSolanaSignature, ethereumSignatureProblem, verifyEthereumSignature, verifySolanaSignature } = yield* Effect.orDie(
        web3Signatures
      )
      let verify: (message: Web3Message) => boolean
      if (chain === "ethereum") {
        const shapeProblem = ethereumSignatureProblem(signature)
        if (shapeProblem !== undefined) return yield* AuthError.validation(shapeProblem)
        verify = (message) => verifyEthereumSignature(message.raw, message.address, signature)
      } else {
        const decoded = decodeSolanaSignature(signature)
        if (Either.isLeft(decoded)) return yield* AuthError.validation(decoded.left)
        verify = (message) => verifySolanaSignature(message.raw, message.domain, message.address, decoded.right)
      }
      const parsed = parseWeb3Message(chain, raw)
      if (Either.isLeft(parsed)) return yield* AuthError.validation(parsed.left)
      const message = parsed.right
      if (!verify(message)) return yield* AuthError.oauth("invalid_grant", "Signature does not match address in message")

      const now = yield* Clock.currentTimeMillis
      const refused = checkWeb3Message(message, now, { siteUrl: config.siteUrl, allowList, maximumValidity: settings.maximumValidityDuration })
      if (refused !== undefined) return yield* AuthError.oauth("invalid_grant", refused)

      const at = new Date(now)
      const providerId = `web3:${chain}:${message.address}`
      const data = identityData(message, providerId)
      const signedIn = Effect.gen(function*() {
        const first = yield* used.claim(messageDigest(chain, raw), new Date(web3MessageValidUntil(message, settings.maximumValidityDuration)))
        if (!first) return yield* AuthError.oauth("invalid_grant", `Signed ${chainName(chain)} message was already used`)
        const user = yield* accounts.signInWithoutEmail("web3", providerId, data, at)
        return yield* tokens.issue(user, "web3", at, {
          action: "login",
          traits: { provider: "web3", chain, network: message.chainId, address: message.address, domain: message.domain, uri: message.uri }
        })
      })
      // The claim, the account and the session commit together: a refused sign-in leaves its message unused. Two
      // first sign-ins of one wallet (different messages) race to insert its identity; the loser runs once more
      // and finds the winner's user.
      const attempt = transactions.run(signedIn).pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* attempt.pipe(Effect.catchSomeDefect((defect) => isLostRace(defect) ? Option.some(attempt) : Option.none()))
    })

    return { signIn } as const
  }),
  dependencies: [ExternalAccounts.Default, AccessTokens.Default, AuditLog.Default, Web3UsedMessagesRepo.Default, Transactions.Live]
}) {}
