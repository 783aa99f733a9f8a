import * as Option from "effect/Option"

/**
 * The two API keys a Supabase client is configured with: `anon` is public (shipped in apps), `service_role` is
 * a secret that carries admin rights (it is among JWT_ADMIN_ROLES).
 */
export type ApiKeyRole = "anon" | "service_role"

export const API_KEY_ROLES: ReadonlyArray<ApiKeyRole> = ["anon", "service_role"]

// As Supabase's CLI issues them: about ten years, because the keys are pasted into app builds and rarely rotated.
const LIFETIME_SECONDS = 10 * 365 * 24 * 60 * 60

/** The claims of an API key. No sub and no aud: the key stands for a role, not for a user. */
export const apiKeyClaims = (
  role: ApiKeyRole,
  issuer: string,
  nowSeconds: number
): { readonly iss: string; readonly role: ApiKeyRole; readonly iat: number; readonly exp: number } => ({
  iss: issuer,
  role,
  iat: nowSeconds,
  exp: nowSeconds + LIFETIME_SECONDS
})

/** JWT_ISSUER when set, else the URL the server is reached at, as for access tokens. */
export const apiKeyIssuer = (jwtIssuer: Option.Option<string>, externalUrl: string): string =>
  Option.getOrElse(jwtIssuer, () => (externalUrl !== "" ? externalUrl : "gatehouse"))
