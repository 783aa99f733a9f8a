import type { AuthError } from "../domain/AuthError.js"

/** GoTrue's oauthErrorMap: the OAuth `error` for an error's HTTP status. */
const OAUTH_ERRORS: Readonly<Record<number, string>> = {
  400: "invalid_request",
  401: "unauthorized_client",
  403: "access_denied",
  500: "server_error",
  503: "temporarily_unavailable"
}

export const oauthErrorOf = (status: number): string => OAUTH_ERRORS[status] ?? (status >= 500 ? "server_error" : "invalid_request")

/** GoTrue's way of marking its own redirects: an empty `sb` parameter after the others, which are sorted by key. */
const encoded = (values: Readonly<Record<string, string>>): string =>
  `${new URLSearchParams(Object.keys(values).sort().map((key): [string, string] => [key, values[key]!])).toString()}&sb=`

const withFragment = (url: string, values: Readonly<Record<string, string>>): string => {
  const target = new URL(url)
  target.hash = ""
  return `${target.href}#${encoded(values)}`
}

export interface CallbackSession {
  readonly access_token: string
  readonly refresh_token: string
  readonly expires_in: number
  readonly expires_at: number
  readonly token_type: string
}

/** The implicit flow's success: the session and the provider's tokens in the fragment, where only the page reads them. */
export const sessionFragment = (
  url: string,
  session: CallbackSession,
  provider: string,
  providerTokens: { readonly accessToken: string; readonly refreshToken: string | null }
): string =>
  withFragment(url, {
    access_token: session.access_token,
    expires_at: String(session.expires_at),
    expires_in: String(session.expires_in),
    provider,
    provider_refresh_token: providerTokens.refreshToken ?? "",
    provider_token: providerTokens.accessToken,
    refresh_token: session.refresh_token,
    token_type: session.token_type
  })

/** The error values GoTrue redirects with; a provider's own error (`?error=` on the callback) is passed on as it came. */
export type CallbackFailure =
  | { readonly _tag: "Auth"; readonly error: AuthError }
  | { readonly _tag: "Provider"; readonly error: string; readonly description: string }

const errorValues = (failure: CallbackFailure): Record<string, string> =>
  failure._tag === "Auth"
    ? { error: oauthErrorOf(failure.error.status), error_code: failure.error.code, error_description: failure.error.message }
    : { error: failure.error, error_description: failure.description }

/** A failed callback: the error in the fragment, and for a PKCE flow in the query too, where a PKCE app looks. */
export const errorRedirect = (url: string, failure: CallbackFailure, pkce: boolean): string => {
  const values = errorValues(failure)
  if (!pkce) return withFragment(url, values)
  const target = new URL(url)
  target.hash = ""
  for (const [key, value] of Object.entries(values)) target.searchParams.set(key, value)
  return withFragment(target.href, values)
}

/** The PKCE flow's success: the auth code in the query, for the app to exchange with its verifier. */
export const codeRedirect = (url: string, code: string): string => {
  const target = new URL(url)
  target.hash = ""
  target.searchParams.set("code", code)
  return target.href
}
