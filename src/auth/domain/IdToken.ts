import { createHash } from "node:crypto"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthError } from "./AuthError.js"
import type { ExternalProfile } from "./ExternalLink.js"

/*
 * The rules of POST /token?grant_type=id_token (reference §2.6, GoTrue's token_oidc.go) that need no network:
 * which provider a request means and the checks on a token whose signature, issuer and expiry
 * have been verified. Errors are GoTrue's: OAuth-style `invalid request` (with the space) for a bad token,
 * `validation_failed` for an unknown provider, `provider_disabled` for a known one that is off. What each provider
 * contributes (its issuer, its key URL, its claims) is in its descriptor under src/auth/oauth, as an IdTokenIssuer.
 */

/** What the grant reads of a provider's EXTERNAL_<P>_* settings. */
export interface IdTokenProviderSettings {
  readonly enabled: boolean
  /** One client id, or several separated by commas (GoTrue's list), any of which is an acceptable audience. */
  readonly clientId: string
  readonly url: Option.Option<string>
}

export interface IdTokenRequestTarget {
  readonly provider: string
  readonly issuer: string
  /** The token's own iss claim, read without verification: how an Azure tenant's issuer is found. */
  readonly unverifiedIssuer: string | undefined
}

/**
 * What the grant needs of one provider whose ID tokens it accepts: the provider's descriptor (src/auth/oauth)
 * supplies it, so its issuer, where its keys are and how its claims read sit with the rest of its facts.
 */
export interface IdTokenIssuer {
  /**
   * Where the provider stands in GoTrue's order (token_oidc.go tries apple, google, azure, keycloak): the first
   * provider a request names, by `provider` or by `issuer`, is the one meant.
   */
  readonly order: number
  /** Whether a request's `issuer` names this provider (its `provider` name always does). */
  readonly issuedBy: (issuer: string, settings: IdTokenProviderSettings) => boolean
  /** The only issuer its token may have, or GoTrue's refusal; "" when the settings name none (keycloak without a URL). */
  readonly expectedIssuer: (target: IdTokenRequestTarget, settings: IdTokenProviderSettings) => Either.Either<string, AuthError>
  /** Where its signing keys are: under EXTERNAL_<P>_URL when set, as the redirect flow reads it, else its own hosts. */
  readonly jwksUrl: (url: string | undefined) => string
  /** The profile a verified token vouches for, shaped as GoTrue's parser for the provider shapes it. */
  readonly profile: (payload: Readonly<Record<string, unknown>>) => Either.Either<ExternalProfile, AuthError>
}

export interface ResolvedIdTokenProvider {
  readonly name: string
  /** The only issuer the token may have; its signature is then checked against `jwksUrl`. */
  readonly issuer: string
  readonly jwksUrl: string
  readonly clientIds: ReadonlyArray<string>
  /** The provider's reading of the token once verified. */
  readonly profile: IdTokenIssuer["profile"]
}

export const withoutTrailingSlash = (url: string): string => url.replace(/\/+$/, "")

export const clientIdsOf = (clientId: string): ReadonlyArray<string> =>
  clientId.split(",").map((id) => id.trim()).filter((id) => id !== "")

/**
 * The provider a request names, by `provider` or by `issuer`, in GoTrue's order. The issuer a token must have is
 * the provider's own: Apple's and Google's fixed ones, the Azure tenant issuer of the request or else of the token,
 * the keycloak realm URL. EXTERNAL_<P>_URL moves where the keys are read (so a test or a proxy can serve them) but
 * never which issuer is accepted, except for keycloak, whose URL is its issuer.
 */
export const resolveIdTokenProvider = (
  target: IdTokenRequestTarget,
  providers: ReadonlyArray<readonly [name: string, issuer: IdTokenIssuer]>,
  settings: (name: string) => IdTokenProviderSettings
): Either.Either<ResolvedIdTokenProvider, AuthError> => {
  const ordered = [...providers].sort(([, a], [, b]) => a.order - b.order)
  const picked = ordered.find(([name, p]) => target.provider === name || p.issuedBy(target.issuer, settings(name)))
  if (picked === undefined) return Either.left(AuthError.validation(`Custom OIDC provider "${target.issuer}" not allowed`))
  const [name, provider] = picked
  const config = settings(name)
  return Either.flatMap(provider.expectedIssuer(target, config), (issuer) =>
    !config.enabled || issuer === ""
      ? Either.left(AuthError.of(400, "provider_disabled", `Provider (issuer "${issuer}") is not enabled`))
      : Either.right({
        name,
        issuer,
        jwksUrl: provider.jwksUrl(Option.getOrUndefined(config.url)),
        clientIds: clientIdsOf(config.clientId),
        profile: provider.profile
      }))
}

export const badIdToken = (): AuthError => AuthError.oauth("invalid request", "Bad ID token")

const asArray = (aud: unknown): ReadonlyArray<string> =>
  typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud.filter((a): a is string => typeof a === "string") : []

/** The token is for one of the provider's client ids. */
export const checkAudience = (aud: unknown, clientIds: ReadonlyArray<string>): Either.Either<void, AuthError> => {
  const audiences = asArray(aud)
  return audiences.some((a) => clientIds.includes(a))
    ? Either.void
    // Go prints the list as [a b]; the client sees GoTrue's text.
    : Either.left(AuthError.oauth("invalid request", `Unacceptable audience in id_token: [${audiences.join(" ")}]`))
}

export const sha256Hex = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/**
 * GoTrue's nonce rule: the token and the request both carry a nonce or neither does, and then the token's is the
 * hex SHA-256 of the request's (the app hashed its nonce for the provider and sends the original here). A plain
 * nonce equal to the token's is not accepted: anyone who saw the token could send that.
 */
export const checkNonce = (tokenNonce: unknown, requestNonce: string): Either.Either<void, AuthError> => {
  const inToken = typeof tokenNonce === "string" ? tokenNonce : ""
  if ((inToken !== "") !== (requestNonce !== "")) {
    return Either.left(AuthError.oauth("invalid request", "Passed nonce and nonce in id_token should either both exist or not."))
  }
  if (inToken !== "" && sha256Hex(requestNonce) !== inToken) return Either.left(AuthError.oauth("invalid nonce", "Nonces mismatch"))
  return Either.void
}

const HASH_OF_ALG: Readonly<Record<string, string>> = {
  RS256: "sha256", PS256: "sha256", ES256: "sha256",
  RS384: "sha384", PS384: "sha384", ES384: "sha384",
  RS512: "sha512", PS512: "sha512", ES512: "sha512", EdDSA: "sha512"
}

/**
 * OpenID Connect's at_hash: when the app also sends the provider's access token and the ID token has an at_hash,
 * they must belong together (the left half of the token's hash, base64url). Without either there is nothing to tie.
 */
export const checkAccessTokenHash = (alg: string, atHash: unknown, accessToken: string): Either.Either<void, AuthError> => {
  if (accessToken === "" || typeof atHash !== "string" || atHash === "") return Either.void
  const hash = HASH_OF_ALG[alg]
  if (hash === undefined) return Either.left(badIdToken())
  const digest = createHash(hash).update(accessToken, "ascii").digest()
  return digest.subarray(0, digest.length / 2).toString("base64url") === atHash ? Either.void : Either.left(badIdToken())
}

/** A claim that is a non-empty string, or undefined. */
export const claimString = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/** Apple writes its booleans as strings ("true"); the others as booleans. */
export const claimTruthy = (value: unknown): boolean => value === true || value === "true" || value === "1" || value === 1

/** The given claims that are present and not empty, as they are. */
export const pickClaims = (payload: Readonly<Record<string, unknown>>, keys: ReadonlyArray<string>): Record<string, unknown> =>
  Object.fromEntries(keys.filter((key) => payload[key] !== undefined && payload[key] !== "").map((key) => [key, payload[key]]))

/**
 * What every provider's ID token gives the same way: the subject (without one, no profile), the address and whether
 * it is verified, and the issuer to keep among the claims. Each provider's profile builds on it.
 */
export const idTokenBase = (payload: Readonly<Record<string, unknown>>): Either.Either<{
  readonly base: { readonly providerId: string; readonly email: string | undefined; readonly emailVerified: boolean }
  readonly issuer: { readonly iss?: string }
}, AuthError> => {
  const sub = claimString(payload["sub"])
  if (sub === undefined) return Either.left(AuthError.oauth("invalid request", "Missing sub claim in id_token"))
  const iss = claimString(payload["iss"])
  return Either.right({
    base: { providerId: sub, email: claimString(payload["email"]), emailVerified: claimTruthy(payload["email_verified"]) },
    issuer: iss !== undefined ? { iss } : {}
  })
}
