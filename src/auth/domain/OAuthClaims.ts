import type { UserRow } from "./UserRow.js"
import { parseScopes } from "./OAuthScopes.js"

const metadataString = (user: UserRow, key: string): string | undefined => {
  const value = user.raw_user_meta_data?.[key]
  return typeof value === "string" && value !== "" ? value : undefined
}

/** The profile scope's claims, with GoTrue's fallbacks (name: the email; picture: avatar_url; username). */
const profileClaims = (user: UserRow): Record<string, unknown> => {
  const name = metadataString(user, "name") ?? (user.email !== null && user.email !== "" ? user.email : undefined)
  const picture = metadataString(user, "picture") ?? metadataString(user, "avatar_url")
  const preferredUsername = metadataString(user, "preferred_username") ?? metadataString(user, "username")
  const updatedAt = user.updated_at === null ? 0 : Math.floor(user.updated_at.getTime() / 1000)
  return {
    ...(name === undefined ? {} : { name }),
    ...(picture === undefined ? {} : { picture }),
    ...(preferredUsername === undefined ? {} : { preferred_username: preferredUsername }),
    ...(updatedAt > 0 ? { updated_at: updatedAt } : {})
  }
}

/**
 * GET /oauth/userinfo's answer (GoTrue's OAuthUserInfo): `sub`, and per scope of the token's session: email
 * (email, email_verified only when true), profile (the profile claims and user_metadata), phone (phone,
 * phone_verified only when true). A session without scopes (not an OAuth one) gets `sub` alone.
 */
export const userInfoClaims = (user: UserRow, sessionScopes: string | null): Record<string, unknown> => {
  const scopes = parseScopes(sessionScopes ?? "")
  const claims: Record<string, unknown> = { sub: user.id }
  if (scopes.includes("email")) {
    if (user.email !== null && user.email !== "") claims["email"] = user.email
    if (user.email_confirmed_at !== null) claims["email_verified"] = true
  }
  if (scopes.includes("profile")) {
    Object.assign(claims, profileClaims(user))
    if (user.raw_user_meta_data !== null) claims["user_metadata"] = user.raw_user_meta_data
  }
  if (scopes.includes("phone")) {
    if (user.phone !== null && user.phone !== "") claims["phone"] = user.phone
    if (user.phone_confirmed_at !== null) claims["phone_verified"] = true
  }
  return claims
}

export interface IdTokenInput {
  readonly user: UserRow
  readonly issuer: string
  readonly clientId: string
  readonly scopes: string
  readonly nonce: string | null
  /** When the user authenticated (the exchange: GoTrue's last_sign_in_at, just set), in Unix seconds. */
  readonly authTime: number
  readonly iat: number
}

/** An ID token's lifetime, GoTrue's fixed hour. */
export const ID_TOKEN_SECONDS = 3600

/**
 * An ID token's claims (GoTrue's GenerateIDToken): who, for which client, when; `email_verified` and
 * `phone_number_verified` always (false without their scope); the email, phone and profile claims by scope.
 */
export const idTokenClaims = ({ authTime, clientId, iat, issuer, nonce, scopes, user }: IdTokenInput): Record<string, unknown> => {
  const granted = parseScopes(scopes)
  const email = granted.includes("email") ? user.email ?? "" : ""
  const phone = granted.includes("phone") ? user.phone ?? "" : ""
  return {
    iss: issuer,
    sub: user.id,
    aud: clientId,
    exp: iat + ID_TOKEN_SECONDS,
    iat,
    ...(nonce === null || nonce === "" ? {} : { nonce }),
    auth_time: authTime,
    ...(email === "" ? {} : { email }),
    email_verified: granted.includes("email") && user.email_confirmed_at !== null,
    ...(phone === "" ? {} : { phone_number: phone }),
    phone_number_verified: granted.includes("phone") && user.phone_confirmed_at !== null,
    ...(granted.includes("profile") ? profileClaims(user) : {}),
    client_id: clientId
  }
}

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * Whether verified claims are an ID token's (idTokenClaims): they name a client and no session. Access tokens of an
 * OAuth session name both; other access tokens, and the anon and service_role keys, name no client. An ID token is
 * signed with the access-token key, so the bearer check asks this to keep it from authenticating anything.
 */
export const isIdTokenClaims = (claims: Readonly<Record<string, unknown>>): boolean => {
  const session = claims["session_id"]
  return claims["client_id"] !== undefined && (typeof session !== "string" || session === "" || session === NIL_UUID)
}
