import { createHash } from "node:crypto"
import { Either, Option } from "effect"
import { AuthError } from "./AuthError.js"
import type { ExternalProfile } from "./ExternalLink.js"

/*
 * The rules of POST /token?grant_type=id_token (reference §2.6, GoTrue's token_oidc.go) that need no network:
 * which provider a request means, where its keys are, and the checks on a token whose signature, issuer and expiry
 * have been verified. Errors are GoTrue's: OAuth-style `invalid request` (with the space) for a bad token,
 * `validation_failed` for an unknown provider, `provider_disabled` for a known one that is off.
 */

export const ID_TOKEN_PROVIDERS = ["apple", "google", "azure", "keycloak"] as const
export type IdTokenProviderName = (typeof ID_TOKEN_PROVIDERS)[number]

export const APPLE_ISSUER = "https://appleid.apple.com"
export const GOOGLE_ISSUER = "https://accounts.google.com"
const AZURE_ISSUER = /^https:\/\/login\.microsoftonline\.com\/[^/]+\/v2\.0$/

/**
 * Where each provider publishes its signing keys; EXTERNAL_<P>_URL, when set, replaces the base: the host, or for
 * azure the tenant URL (`https://login.microsoftonline.com/<tenant>`), as the redirect flow reads it too.
 */
const DEFAULT_KEY_BASES: Readonly<Record<Exclude<IdTokenProviderName, "keycloak">, string>> = {
  apple: "https://appleid.apple.com",
  google: "https://www.googleapis.com",
  // Microsoft's common key set signs tokens of every tenant, so one URL serves any tenant's issuer.
  azure: "https://login.microsoftonline.com/common"
}
const KEY_PATHS: Readonly<Record<IdTokenProviderName, string>> = {
  apple: "/auth/keys",
  google: "/oauth2/v3/certs",
  azure: "/discovery/v2.0/keys",
  keycloak: "/protocol/openid-connect/certs"
}

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

export interface ResolvedIdTokenProvider {
  readonly name: IdTokenProviderName
  /** The only issuer the token may have; its signature is then checked against `jwksUrl`. */
  readonly issuer: string
  readonly jwksUrl: string
  readonly clientIds: ReadonlyArray<string>
}

const withoutTrailingSlash = (url: string): string => url.replace(/\/+$/, "")

export const isAzureIssuer = (issuer: string): boolean => AZURE_ISSUER.test(withoutTrailingSlash(issuer))

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
  settings: (name: IdTokenProviderName) => IdTokenProviderSettings
): Either.Either<ResolvedIdTokenProvider, AuthError> => {
  const { issuer, provider } = target
  const keycloakUrl = Option.map(settings("keycloak").url, withoutTrailingSlash)
  const pick = (): { name: IdTokenProviderName; issuer: string } | AuthError => {
    if (provider === "apple" || issuer === APPLE_ISSUER) return { name: "apple", issuer: APPLE_ISSUER }
    if (provider === "google" || issuer === GOOGLE_ISSUER) return { name: "google", issuer: GOOGLE_ISSUER }
    if (provider === "azure" || isAzureIssuer(issuer)) {
      const tenantIssuer = isAzureIssuer(issuer) ? issuer : target.unverifiedIssuer ?? ""
      if (!isAzureIssuer(tenantIssuer)) return AuthError.validation("Unable to detect issuer in ID token for Azure provider")
      return { name: "azure", issuer: withoutTrailingSlash(tenantIssuer) }
    }
    const keycloakIssuer = settings("keycloak").enabled && Option.isSome(keycloakUrl) && withoutTrailingSlash(issuer) === keycloakUrl.value
    if (provider === "keycloak" || keycloakIssuer) return { name: "keycloak", issuer: Option.getOrElse(keycloakUrl, () => "") }
    return AuthError.validation(`Custom OIDC provider "${issuer}" not allowed`)
  }
  const picked = pick()
  if (picked instanceof AuthError) return Either.left(picked)
  const config = settings(picked.name)
  if (!config.enabled || (picked.name === "keycloak" && picked.issuer === "")) {
    return Either.left(AuthError.of(400, "provider_disabled", `Provider (issuer "${picked.issuer}") is not enabled`))
  }
  const base = picked.name === "keycloak"
    ? picked.issuer
    : Option.getOrElse(Option.map(config.url, withoutTrailingSlash), () => DEFAULT_KEY_BASES[picked.name as Exclude<IdTokenProviderName, "keycloak">])
  return Either.right({ name: picked.name, issuer: picked.issuer, jwksUrl: `${base}${KEY_PATHS[picked.name]}`, clientIds: clientIdsOf(config.clientId) })
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

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/** Apple writes its booleans as strings ("true"); the others as booleans. */
const truthy = (value: unknown): boolean => value === true || value === "true" || value === "1" || value === 1

/** The OpenID Connect profile claims GoTrue's Claims struct keeps for a generic provider. */
const STANDARD_CLAIMS = [
  "given_name", "family_name", "middle_name", "nickname", "preferred_username", "profile", "website", "gender",
  "birthdate", "zoneinfo", "locale", "updated_at", "phone"
] as const

const pickClaims = (payload: Readonly<Record<string, unknown>>, keys: ReadonlyArray<string>): Record<string, unknown> =>
  Object.fromEntries(keys.filter((key) => payload[key] !== undefined && payload[key] !== "").map((key) => [key, payload[key]]))

/**
 * The profile a verified ID token vouches for, shaped as GoTrue's parser for the provider shapes it. Keycloak (a
 * generic OpenID provider) must give an email, as GoTrue requires; Bad ID token otherwise.
 */
export const profileFromIdToken = (
  provider: IdTokenProviderName,
  payload: Readonly<Record<string, unknown>>
): Either.Either<ExternalProfile, AuthError> => {
  const sub = str(payload["sub"])
  if (sub === undefined) return Either.left(AuthError.oauth("invalid request", "Missing sub claim in id_token"))
  const iss = str(payload["iss"])
  const issuer = iss !== undefined ? { iss } : {}
  const base = { providerId: sub, email: str(payload["email"]), emailVerified: truthy(payload["email_verified"]) }
  switch (provider) {
    case "google": {
      const hd = str(payload["hd"])
      return Either.right({
        ...base,
        name: str(payload["name"]),
        avatarUrl: str(payload["picture"]),
        claims: { ...issuer, ...(hd !== undefined ? { custom_claims: { hd } } : {}) }
      })
    }
    case "apple": {
      const privateEmail = payload["is_private_email"]
      return Either.right({
        ...base,
        claims: { ...issuer, ...(privateEmail !== undefined ? { custom_claims: { is_private_email: truthy(privateEmail) } } : {}) }
      })
    }
    case "azure": {
      // Azure marks a verified address with xms_edov (the email's domain owner verified it) rather than email_verified.
      const tid = str(payload["tid"])
      return Either.right({
        ...base,
        emailVerified: base.emailVerified || truthy(payload["xms_edov"]),
        name: str(payload["name"]),
        claims: { ...issuer, ...pickClaims(payload, ["preferred_username"]), ...(tid !== undefined ? { custom_claims: { tid } } : {}) }
      })
    }
    case "keycloak":
      if (base.email === undefined) return Either.left(badIdToken())
      return Either.right({
        ...base,
        name: str(payload["name"]),
        avatarUrl: str(payload["picture"]),
        claims: { ...issuer, ...pickClaims(payload, STANDARD_CLAIMS) }
      })
  }
}
