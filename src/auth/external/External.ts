import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { AuthError } from "../domain/AuthError.js"
import { BROWSER_BINDING_BYTES, browserBindingFor, digestBrowserBinding, isBrowserBinding } from "../domain/BrowserBinding.js"
import { isFlowStateExpired, requestedPkce } from "../domain/Pkce.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { Confirmations } from "../messages/Confirmations.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { FlowStateRepo, type OAuthFlow } from "../sessions/FlowStateRepo.js"
import { AuthMessages } from "../messages/AuthMessages.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { AuditLog } from "../users/AuditLog.js"
import { ExternalAccounts } from "../users/ExternalAccounts.js"
import { Users } from "../users/Users.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { IdentityLinks } from "../users/IdentityLinks.js"
import { type CallbackFailure, codeRedirect, errorRedirect, sessionFragment } from "./CallbackRedirect.js"
import { parseScopes, ProviderFailure, type ProviderProfile } from "../oauth/OAuthProvider.js"
import { OAuthProviders } from "../oauth/OAuthProviders.js"
import { traced } from "../../platform/Traced.js"

export interface AuthorizeQuery {
  readonly provider?: string | undefined
  readonly scopes?: string | undefined
  readonly redirectTo?: string | undefined
  readonly codeChallenge?: string | undefined
  readonly codeChallengeMethod?: string | undefined
  /** The request's other query parameters, in order. */
  readonly others?: ReadonlyArray<readonly [string, string]>
}

export interface CallbackQuery {
  readonly state?: string | undefined
  /** OAuth 1.0a's callback names its flow by the request token (`oauth_token`) instead of a state. */
  readonly requestToken?: string | undefined
  readonly code?: string | undefined
  readonly error?: string | undefined
  readonly errorDescription?: string | undefined
  /** What the provider posted about the user beside the code (Apple's `user`, on the first consent only). */
  readonly user?: string | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const auth = (error: AuthError): CallbackFailure => ({ _tag: "Auth", error })

const badState = () => auth(AuthError.of(400, "bad_oauth_state", "OAuth callback with invalid state"))

// Gatehouse's own refusal (SECURITY_OAUTH_BROWSER_BINDING_ENABLED): GoTrue's code and shape, a message of its own.
const otherBrowser = () =>
  auth(AuthError.of(400, "bad_oauth_state", "OAuth callback from a browser that did not start the sign-in: start it again in this browser"))

/**
 * Where to send the browser, and the browser-binding value its cookie must (go on to) hold: None when binding is
 * off, and on every error redirect.
 */
export interface BrowserRedirect {
  readonly location: string
  readonly binding: Option.Option<string>
}

/** Where a flow waits to be bound to its browser; under API_EXTERNAL_URL, the host that receives /callback. */
const continueUrl = (externalUrl: string, state: string): string => {
  const url = new URL("authorize/continue", externalUrl.endsWith("/") ? externalUrl : `${externalUrl}/`)
  url.searchParams.set("state", state)
  return url.href
}

/** The profile as the sign-in floor takes it (absent rather than null). */
const asExternalProfile = (profile: ProviderProfile) => ({
  providerId: profile.providerId,
  email: profile.email ?? undefined,
  emailVerified: profile.emailVerified,
  name: profile.name ?? undefined,
  avatarUrl: profile.avatarUrl ?? undefined,
  claims: profile.claims
})

/**
 * Sign-in with an external provider (reference §1 /authorize, /callback): the browser goes to the provider with a
 * state that names a flow_state row, comes back to /callback with a code, and leaves with a session (or, in the
 * PKCE flow, an auth code for /token) at the allowed redirect_to.
 */
export class External extends Effect.Service<External>()("auth/External", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const providers = yield* OAuthProviders
    const flows = yield* FlowStateRepo
    const accounts = yield* ExternalAccounts
    const links = yield* IdentityLinks
    const tokens = yield* AccessTokens
    const confirmations = yield* Confirmations
    const random = yield* SecureRandom
    const allowList = compileAllowList(config.uriAllowList)
    const bindingEnabled = config.security.oauthBrowserBindingEnabled

    /** The provider's authorization URL, with a new flow's id as the state. */
    const start = (
      query: AuthorizeQuery,
      binding: { readonly browserBinding: string | null; readonly waitsForBrowser: boolean },
      linkingTargetId: string | null
    ) =>
      Effect.gen(function*() {
        const name = query.provider ?? ""
        const provider = yield* Either.mapLeft(providers.lookup(name), (why) =>
          AuthError.validation(
            why._tag === "Unknown" ? `Unsupported provider: Provider ${why.name} could not be found` : "Unsupported provider: provider is not enabled"
          ))
        const pkce = yield* requestedPkce(query.codeChallenge, query.codeChallengeMethod)
        const state = yield* random.uuid()
        // RFC 7636 §4.1: 32 octets, base64url, a 43-character verifier.
        const codeVerifier = provider.usesPkce ? (yield* random.bytes(32)).toString("base64url") : null
        const request = {
          state,
          extraScopes: parseScopes(query.scopes),
          codeVerifier,
          passThrough: query.others ?? []
        }
        const started = provider.begin === undefined
          ? { url: provider.authorizationUrl(request), handle: null, verifier: request.codeVerifier }
          : yield* provider.begin(request).pipe(
            Effect.tapError((failure) => Effect.logWarning(`${provider.name} could not start the sign-in: ${failure.reason}`)),
            Effect.mapError(() => new AuthError({ status: 500, code: "unexpected_failure", message: "Error getting authorization URL" }))
          )
        yield* flows.startOAuth({
          id: state,
          providerType: provider.name,
          pkce: Option.isSome(pkce) ? { ...pkce.value, authCode: yield* random.uuid() } : null,
          referrer: chooseRedirect(query.redirectTo, config.siteUrl, allowList),
          providerCodeVerifier: started.verifier,
          providerRequestToken: started.handle,
          linkingTargetId,
          browserBinding: binding.browserBinding,
          pendingAuthorizeUrl: binding.waitsForBrowser ? started.url.href : null,
          now: new Date(yield* Clock.currentTimeMillis)
        })
        return { state, url: started.url.href }
      })

    /** The binding a browser's flows share: the one its cookie presents, else a new one. */
    const bindingOf = (presented: string | undefined) =>
      Effect.map(random.bytes(BROWSER_BINDING_BYTES), (fresh) => browserBindingFor(presented, fresh.toString("base64url")))

    /**
     * GET /authorize: the provider's authorization URL, and the binding the browser's cookie is to hold (the one it
     * presented, or a new one), whose digest the flow keeps for its callback.
     */
    const authorize = traced("External.authorize")(function*(
      query: AuthorizeQuery,
      presentedBinding: string | undefined
    ): Effect.fn.Return<BrowserRedirect, AuthError> {
      if (!bindingEnabled) {
        const { url } = yield* start(query, { browserBinding: null, waitsForBrowser: false }, null)
        return { location: url, binding: Option.none() }
      }
      const binding = yield* bindingOf(presentedBinding)
      const { url } = yield* start(query, { browserBinding: digestBrowserBinding(binding), waitsForBrowser: false }, null)
      return { location: url, binding: Option.some(binding) }
    })

    /**
     * GET /user/identities/authorize: a flow whose callback adds the identity to the signed-in user. It comes as an
     * API call (auth-js sends it with fetch, without credentials, from the app's origin), whose answer cannot set the
     * browser's cookie; so with binding on the flow waits, unbound, and the URL handed back is /authorize/continue on
     * this server, where the browser that opens it binds the flow and is sent on to the provider.
     */
    const startLink = traced("External.startLink")(function*(
      query: AuthorizeQuery,
      userId: string
    ): Effect.fn.Return<string, AuthError> {
      const { state, url } = yield* start(query, { browserBinding: null, waitsForBrowser: bindingEnabled }, userId)
      return bindingEnabled ? continueUrl(platform.api.externalUrl, state) : url
    })

    /** GET /authorize/continue: binds a waiting linking flow to this browser, once, and sends it to the provider. */
    const continueLink = traced("External.continueLink")(function*(
      state: string | undefined,
      presentedBinding: string | undefined
    ): Effect.fn.Return<BrowserRedirect> {
      const refuse = (failure: CallbackFailure) => ({ location: errorRedirect(config.siteUrl, failure, false), binding: Option.none() })
      if (!bindingEnabled || state === undefined || !UUID.test(state)) return refuse(badState())
      const binding = yield* bindingOf(presentedBinding)
      const bound = yield* flows.bindPendingOAuth(state.toLowerCase(), digestBrowserBinding(binding))
      if (Option.isNone(bound)) return refuse(badState())
      if (isFlowStateExpired(bound.value.createdAt, new Date(yield* Clock.currentTimeMillis))) {
        return refuse(auth(AuthError.of(422, "flow_state_expired", "Flow state has expired")))
      }
      return { location: bound.value.authorizeUrl, binding: Option.some(binding) }
    })

    /** Everything after the state checked out: the code for tokens and a profile, the profile for a user. */
    const finish = (flow: OAuthFlow, query: CallbackQuery, at: Date) =>
      Effect.gen(function*() {
        if (query.error !== undefined && query.error !== "") {
          return yield* Effect.fail<CallbackFailure>({ _tag: "Provider", error: query.error, description: query.errorDescription ?? "" })
        }
        const code = query.code ?? ""
        if (code === "") {
          return yield* Effect.fail(auth(AuthError.of(400, "bad_oauth_callback", "OAuth callback with missing authorization code missing")))
        }
        const provider = yield* Either.mapLeft(providers.lookup(flow.provider_type), () =>
          auth(AuthError.of(400, "oauth_provider_not_supported", "Unsupported provider: provider is not enabled")))
        const providerTokens = yield* provider.exchange(code, flow.provider_code_verifier).pipe(
          Effect.tapError((failure) => Effect.logWarning(`${provider.name} code exchange failed: ${failure.reason}`)),
          Effect.mapError(() => auth(new AuthError({ status: 500, code: "unexpected_failure", message: "Unable to exchange external code" })))
        )
        const posted = query.user ?? ""
        const profile = yield* provider.profile(providerTokens).pipe(
          Effect.flatMap((profile) =>
            posted === "" || provider.withPostedUser === undefined
              ? Effect.succeed(profile)
              : Either.mapLeft(provider.withPostedUser(profile, posted), (reason) => new ProviderFailure({ step: "profile", reason }))
          ),
          Effect.tapError((failure) => Effect.logWarning(`${provider.name} profile failed: ${failure.reason}`)),
          Effect.mapError(() =>
            auth(new AuthError({ status: 500, code: "unexpected_failure", message: "Error getting user profile from external provider" }))
          )
        )
        const user = yield* (flow.linking_target_id === null
          ? Effect.map(
            accounts.signIn(provider.name, asExternalProfile(profile)).pipe(
              Effect.catchTag("EmailNeedsVerification", (refused) =>
                Effect.zipRight(
                  confirmations.confirmExternalEmail(refused.user, flow.referrer ?? config.siteUrl, at),
                  Effect.fail(refused.toAuthError())
                ))
            ),
            ({ user }) => user
          )
          : links.link(flow.linking_target_id, provider.name, asExternalProfile(profile))).pipe(Effect.mapError(auth)
        )
        const target = flow.referrer ?? config.siteUrl
        if (flow.auth_code !== null && flow.code_challenge !== null && flow.code_challenge_method !== null) {
          yield* flows.insertOAuthCode({
            id: yield* random.uuid(),
            userId: user.id,
            providerType: provider.name,
            authCode: flow.auth_code,
            challenge: flow.code_challenge,
            method: flow.code_challenge_method,
            providerAccessToken: providerTokens.accessToken,
            providerRefreshToken: providerTokens.refreshToken,
            createdAt: flow.created_at,
            now: at
          })
          return codeRedirect(target, flow.auth_code)
        }
        // The sign-in floor wrote the audit entry (login, or user_signedup for a new user; identity_linked for a link).
        const session = yield* tokens.issue(user, "oauth", at)
        // A sign-in (grant_type `callback` in the sign-in metric); a PKCE flow's is counted at /token instead.
        yield* countTagged(AuthMetrics.signIns, "grant_type", "callback")
        return sessionFragment(target, session, provider.name, providerTokens)
      })

    /**
     * GET or POST /callback: where to send the browser, always; a bad or spent state never yields a session, and with
     * binding on neither does a callback from a browser other than the flow's (nothing is created or linked, and the
     * flow stays for its own browser).
     */
    const callback = traced("External.callback")(function*(
      query: CallbackQuery,
      presentedBinding: string | undefined
    ): Effect.fn.Return<string> {
      const fallback = (failure: CallbackFailure) => errorRedirect(config.siteUrl, failure, false)
      const requestToken = query.requestToken ?? ""
      let state = query.state ?? ""
      if (state === "" && requestToken !== "") {
        const found = yield* flows.findOAuthByRequestToken(requestToken)
        if (Option.isNone(found)) return fallback(badState())
        state = found.value
      }
      if (state === "") return fallback(auth(AuthError.of(400, "bad_oauth_callback", "OAuth state parameter missing")))
      if (!UUID.test(state)) return fallback(badState())
      let binding: string | undefined = undefined
      if (bindingEnabled) {
        if (!isBrowserBinding(presentedBinding)) return fallback(otherBrowser())
        binding = digestBrowserBinding(presentedBinding)
      }
      const claimed = yield* flows.claimOAuth(state.toLowerCase(), binding)
      if (claimed._tag === "OtherBrowser") return fallback(otherBrowser())
      if (claimed._tag === "Unknown") return fallback(badState())
      const flow = claimed.flow
      const target = flow.referrer ?? config.siteUrl
      const pkce = flow.auth_code !== null
      const at = new Date(yield* Clock.currentTimeMillis)
      if (isFlowStateExpired(flow.created_at, at)) {
        return errorRedirect(target, auth(AuthError.of(422, "flow_state_expired", "Flow state has expired")), pkce)
      }
      return yield* finish(flow, query, at).pipe(Effect.catchAll((failure) => Effect.succeed(errorRedirect(target, failure, pkce))))
    })

    return { authorize, startLink, continueLink, callback } as const
  }),
  dependencies: [
    FlowStateRepo.Default,
    ExternalAccounts.Default,
    IdentityLinks.Default,
    AccessTokens.Default,
    UsersRepo.Default,
    Users.Default,
    AuthMessages.Default,
    PendingTokens.Default,
    AuditLog.Default,
    Transactions.Live
  ]
}) {}
