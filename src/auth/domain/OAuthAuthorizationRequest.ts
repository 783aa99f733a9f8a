/** An /oauth/authorize request's query, as sent (absent is ""). */
export interface OAuthAuthorizationRequest {
  readonly client_id: string
  readonly redirect_uri: string
  readonly response_type: string
  readonly scope: string
  readonly state: string
  readonly resource: string
  readonly code_challenge: string
  readonly code_challenge_method: string
  readonly nonce: string
}

/**
 * Whether an authorization request fits GoTrue's column limits (redirect_uri and resource 2048 characters, scope and
 * state 4096, nonce 255). GoTrue finds out when its insert fails and redirects with server_error "error creating
 * authorization"; checked first here, with the same answer.
 */
export const fitsAuthorizationColumns = (request: Pick<OAuthAuthorizationRequest, "redirect_uri" | "scope" | "state" | "resource" | "nonce">): boolean =>
  [...request.redirect_uri].length <= 2048 && [...request.resource].length <= 2048 && [...request.scope].length <= 4096 &&
  [...request.state].length <= 4096 && [...request.nonce].length <= 255 &&
  ![request.redirect_uri, request.scope, request.state, request.resource, request.nonce].some((s) => s.includes("\u0000"))
