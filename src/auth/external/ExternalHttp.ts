import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { browserBindingCookie } from "../domain/BrowserBinding.js"
import { type BrowserRedirect, type CallbackQuery, External } from "./External.js"
import { ExternalApi } from "./ExternalApi.js"

interface CallbackParams {
  readonly state?: string | undefined
  readonly code?: string | undefined
  readonly error?: string | undefined
  readonly error_description?: string | undefined
  readonly oauth_token?: string | undefined
  readonly oauth_verifier?: string | undefined
  readonly denied?: string | undefined
  readonly user?: string | undefined
}

/**
 * The callback's parameters; OAuth 1.0a's (twitter) in OAuth 2's terms: the request token names the flow, the
 * verifier is the code, and `denied` (the request token of a refused sign-in) is an access_denied error.
 */
const callbackQuery = (params: CallbackParams): CallbackQuery => {
  const denied = params.denied !== undefined && params.denied !== ""
  return {
    state: params.state,
    requestToken: params.oauth_token ?? params.denied,
    code: params.code ?? params.oauth_verifier,
    error: params.error ?? (denied ? "access_denied" : undefined),
    errorDescription: params.error_description ?? (denied ? "The user denied the sign-in" : undefined),
    user: params.user
  }
}

const AUTHORIZE_PARAMETERS = new Set(["provider", "scopes", "redirect_to", "code_challenge", "code_challenge_method", "invite_token"])

/** The query parameters /authorize does not read itself, which GoTrue hands on to the provider. */
export const passThrough = (url: string): ReadonlyArray<readonly [string, string]> =>
  [...new URL(url, "http://gatehouse.invalid").searchParams].filter(([key]) => !AUTHORIZE_PARAMETERS.has(key))

// GoTrue answers 302 Found on all three.
const found = (location: string) => HttpServerResponse.redirect(location, { status: 302 })

export const ExternalHttpLive = HttpApiBuilder.group(ExternalApi, "external", (handlers) =>
  Effect.gen(function*() {
    const external = yield* External
    const cookie = browserBindingCookie((yield* PlatformConfig).api.externalUrl)
    const presented = (request: HttpServerRequest.HttpServerRequest) => request.cookies[cookie.name]
    // The cookie is set again on every start, so it lives as long as the browser's newest flow. unsafeSetCookie
    // throws only on a malformed name or value; both are ours (a constant, and base64url).
    const redirectBinding = ({ binding, location }: BrowserRedirect) =>
      Option.match(binding, {
        onNone: () => found(location),
        onSome: (value) =>
          HttpServerResponse.unsafeSetCookie(found(location), cookie.name, value, {
            httpOnly: true,
            secure: cookie.secure,
            sameSite: cookie.sameSite,
            path: cookie.path,
            maxAge: Duration.seconds(cookie.maxAgeSeconds)
          })
      })
    return handlers
      .handle("authorize", ({ request, urlParams }) =>
        Effect.map(
          external.authorize({
            others: passThrough(request.url),
            provider: urlParams.provider,
            scopes: urlParams.scopes,
            redirectTo: urlParams.redirect_to,
            codeChallenge: urlParams.code_challenge,
            codeChallengeMethod: urlParams.code_challenge_method
          }, presented(request)),
          redirectBinding
        ))
      .handle("continueAuthorize", ({ request, urlParams }) =>
        Effect.map(external.continueLink(urlParams.state, presented(request)), redirectBinding))
      .handle("callback", ({ request, urlParams }) =>
        Effect.map(external.callback(callbackQuery(urlParams), presented(request)), found))
      // A form post's fields win over the query's.
      .handle("callbackPost", ({ payload, request, urlParams }) =>
        Effect.map(external.callback(callbackQuery({ ...urlParams, ...payload }), presented(request)), found))
  }))
