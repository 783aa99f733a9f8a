import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { type CallbackQuery, External } from "./External.js"

interface CallbackParams {
  readonly state?: string | undefined
  readonly code?: string | undefined
  readonly error?: string | undefined
  readonly error_description?: string | undefined
}

const callbackQuery = (params: CallbackParams): CallbackQuery => ({
  state: params.state,
  code: params.code,
  error: params.error,
  errorDescription: params.error_description
})

const AUTHORIZE_PARAMETERS = new Set(["provider", "scopes", "redirect_to", "code_challenge", "code_challenge_method", "invite_token"])

/** The query parameters /authorize does not read itself, which GoTrue hands on to the provider. */
export const passThrough = (url: string): ReadonlyArray<readonly [string, string]> =>
  [...new URL(url, "http://gatehouse.invalid").searchParams].filter(([key]) => !AUTHORIZE_PARAMETERS.has(key))

// GoTrue answers 302 Found on all three.
const found = (location: string) => HttpServerResponse.redirect(location, { status: 302 })

export const ExternalHttpLive = HttpApiBuilder.group(AuthApi, "external", (handlers) =>
  Effect.gen(function*() {
    const external = yield* External
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
          }),
          found
        ))
      .handle("callback", ({ urlParams }) => Effect.map(external.callback(callbackQuery(urlParams)), found))
      // A form post's fields win over the query's.
      .handle("callbackPost", ({ payload, urlParams }) =>
        Effect.map(external.callback(callbackQuery({ ...urlParams, ...payload })), found))
  }))
