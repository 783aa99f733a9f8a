import { createHash } from "node:crypto"
import { sameSecret } from "./OtpToken.js"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthError } from "./AuthError.js"

/** RFC 7636's transformations, in GoTrue's spelling (it stores them lower case). */
export type ChallengeMethod = "s256" | "plain"

/** What a request committed to: the challenge it sent and how its verifier will be transformed to match it. */
export interface PkceChallenge {
  readonly challenge: string
  readonly method: ChallengeMethod
}

/** RFC 7636 §4.2: 43 to 128 characters of the unreserved set. */
/** A code challenge's characters and length (RFC 7636's unreserved set), as a regular expression's source. */
export const CODE_CHALLENGE_PATTERN = "^[A-Za-z0-9._~-]{43,128}$"
const CHALLENGE = new RegExp(CODE_CHALLENGE_PATTERN)

export const pkceProblemMessage = {
  unpaired: "PKCE flow requires code_challenge_method and code_challenge",
  length: "code_challenge has to be between 43 and 128 characters",
  characters: "code_challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes",
  method: "code_challenge_method has to be one of s256 or plain"
} as const

export type PkceProblem = keyof typeof pkceProblemMessage

/**
 * A request's PKCE parameters: None when it carries neither (the implicit flow), the challenge when both are
 * well formed, and the problem otherwise. The method is matched without regard to case, as GoTrue does.
 */
export const parsePkce = (
  challenge: string | null | undefined,
  method: string | null | undefined
): Either.Either<Option.Option<PkceChallenge>, PkceProblem> => {
  const c = challenge ?? ""
  const m = (method ?? "").toLowerCase()
  if (c === "" && m === "") return Either.right(Option.none())
  if (c === "" || m === "") return Either.left("unpaired")
  if (c.length < 43 || c.length > 128) return Either.left("length")
  if (!CHALLENGE.test(c)) return Either.left("characters")
  if (m !== "s256" && m !== "plain") return Either.left("method")
  return Either.right(Option.some({ challenge: c, method: m }))
}

/** The challenge a verifier answers under `method`: base64url without padding of its SHA-256, or itself. */
export const challengeOf = (verifier: string, method: ChallengeMethod): string =>
  method === "s256" ? createHash("sha256").update(verifier).digest("base64url") : verifier

/** Whether `verifier` answers the stored challenge, compared in constant time. */
export const verifierMatches = (verifier: string, stored: PkceChallenge): boolean =>
  sameSecret(stored.challenge, challengeOf(verifier, stored.method))

/** The prefix GoTrue puts on a stored token (and so on the link's token) sent in a PKCE flow. */
export const PKCE_TOKEN_PREFIX = "pkce_"

export const pkceToken = (tokenHash: string): string => `${PKCE_TOKEN_PREFIX}${tokenHash}`

export const isPkceToken = (token: string): boolean => token.startsWith(PKCE_TOKEN_PREFIX)

/** The token hash without its PKCE prefix, for comparing with a hash computed from a typed code. */
export const withoutPkcePrefix = (stored: string | null): string | null =>
  stored !== null && isPkceToken(stored) ? stored.slice(PKCE_TOKEN_PREFIX.length) : stored

/** The flow_state authentication_method of an email change's PKCE flow, as GoTrue names it (and its amr). */
export const EMAIL_CHANGE_FLOW = "email_change"

/** GoTrue's default (and minimum) GOTRUE_EXTERNAL_FLOW_STATE_EXPIRY_DURATION, from created_at. */
export const FLOW_STATE_EXPIRY_SECONDS = 300

export const isFlowStateExpired = (createdAt: Date, now: Date): boolean =>
  now.getTime() > createdAt.getTime() + FLOW_STATE_EXPIRY_SECONDS * 1000

/** A request's PKCE parameters, or GoTrue's 400 for malformed ones. */
export const requestedPkce = (
  challenge: string | null | undefined,
  method: string | null | undefined
): Either.Either<Option.Option<PkceChallenge>, AuthError> =>
  Either.mapLeft(parsePkce(challenge, method), (problem) => AuthError.validation(pkceProblemMessage[problem]))

/**
 * The OAuth server's PKCE rule (GoTrue's oauthserver validatePKCEParams, its words), or undefined: PKCE is required,
 * S256 or plain (any case), a challenge of 43 to 128 characters.
 */
export const oauthPkceProblem = (challenge: string, method: string): string | undefined => {
  if (challenge === "" || method === "") return "PKCE flow requires both code_challenge and code_challenge_method"
  const m = method.toLowerCase()
  if (m !== "s256" && m !== "plain") return "code_challenge_method must be 'S256' or 'plain'"
  if (challenge.length < 43 || challenge.length > 128) return "code_challenge must be between 43 and 128 characters"
  return undefined
}
