/** The scopes GoTrue's OAuth server knows (`models.SupportedOAuthScopes`); `offline_access` changes nothing. */
export const SUPPORTED_SCOPES = ["openid", "profile", "email", "phone", "offline_access"] as const

/** GoTrue's ParseScopeString: split on single spaces, blanks dropped. */
export const parseScopes = (scope: string): ReadonlyArray<string> => scope.split(" ").map((s) => s.trim()).filter((s) => s !== "")

/** Why a requested scope string is refused (GoTrue's words), or undefined. "" has already become the default. */
export const scopeProblem = (scope: string): string | undefined => {
  if (scope === "") return "scope parameter is required"
  const scopes = parseScopes(scope)
  if (scopes.length === 0) return "scope parameter cannot be empty"
  const unknown = scopes.find((s) => !(SUPPORTED_SCOPES as ReadonlyArray<string>).includes(s))
  return unknown === undefined ? undefined : `unsupported scope: ${unknown}`
}

/** Whether a consent's scopes cover every requested one. */
export const coversScopes = (granted: string, requested: string): boolean => {
  const have = new Set(parseScopes(granted))
  return parseScopes(requested).every((s) => have.has(s))
}

export const hasScope = (scopes: string | null, scope: string): boolean => scopes !== null && parseScopes(scopes).includes(scope)

/** GoTrue's validatePKCEParams: PKCE is required, S256 or plain (any case), a challenge of 43 to 128 characters. */
export const pkceProblem = (challenge: string, method: string): string | undefined => {
  if (challenge === "" || method === "") return "PKCE flow requires both code_challenge and code_challenge_method"
  const m = method.toLowerCase()
  if (m !== "s256" && m !== "plain") return "code_challenge_method must be 'S256' or 'plain'"
  if (challenge.length < 43 || challenge.length > 128) return "code_challenge must be between 43 and 128 characters"
  return undefined
}

/**
 * Whether an authorization request fits GoTrue's column limits (redirect_uri and resource 2048 characters, scope and
 * state 4096, nonce 255). GoTrue finds out when its insert fails and redirects with server_error "error creating
 * authorization"; checked first here, with the same answer.
 */
export const fitsAuthorizationColumns = (request: {
  readonly redirect_uri: string
  readonly scope: string
  readonly state: string
  readonly resource: string
  readonly nonce: string
}): boolean =>
  [...request.redirect_uri].length <= 2048 && [...request.resource].length <= 2048 && [...request.scope].length <= 4096 &&
  [...request.state].length <= 4096 && [...request.nonce].length <= 255 &&
  ![request.redirect_uri, request.scope, request.state, request.resource, request.nonce].some((s) => s.includes("\u0000"))
