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
