import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import type { AuthError } from "../domain/AuthError.js"
import { clientHeaderName, rateLimitKey, requestClient } from "../../platform/http/RateLimitKey.js"
import { type RequestRate, requestRate } from "../../domain/RequestRate.js"
import { overRequestRate } from "../domain/OverRequestRate.js"
import { RateLimitsRepo } from "./RateLimitsRepo.js"
import { traced } from "../../platform/Traced.js"

/**
 * The routes GoTrue puts behind a per-IP limiter, each with a bucket of its own even where several share one
 * setting (a client may use 30 /otp and 30 /recover in the same five minutes, as in GoTrue).
 */
export type LimitedRoute =
  | "magiclink"
  | "otp"
  | "recover"
  | "resend"
  | "signup"
  | "anonymous_signup"
  | "user"
  | "token"
  | "verify"
  | "verify_guess"
  | "web3"
  | "factor_challenge"
  | "factor_verify"
  | "passkey_options"
  | "oauth_client_register"
  | "oauth_authorize"
  | "sso"
  | "saml_assertion"

/**
 * A per-client setting by its name after RATE_LIMIT_ (MFA_RATE_LIMIT_ for the factors' one), lower case: the `limit`
 * tag of the refusals it causes.
 */
type RequestLimitName =
  | "otp"
  | "anonymous_users"
  | "token_refresh"
  | "verify"
  | "verify_guesses"
  | "web3"
  | "challenge_and_verify"
  | "passkey"
  | "oauth_dynamic_client_register"
  | "oauth_authorize"
  | "sso"
  | "saml_assertion"

/** The setting each route's rate comes from. */
const SETTING_OF: Readonly<Record<LimitedRoute, RequestLimitName>> = {
  magiclink: "otp",
  otp: "otp",
  recover: "otp",
  resend: "otp",
  signup: "otp",
  user: "otp",
  anonymous_signup: "anonymous_users",
  token: "token_refresh",
  verify: "verify",
  verify_guess: "verify_guesses",
  web3: "web3",
  factor_challenge: "challenge_and_verify",
  factor_verify: "challenge_and_verify",
  passkey_options: "passkey",
  oauth_client_register: "oauth_dynamic_client_register",
  oauth_authorize: "oauth_authorize",
  sso: "sso",
  saml_assertion: "saml_assertion"
}

/**
 * Per-client request rates, shared by every instance through Postgres. A handler calls `check` before it does any
 * work, as GoTrue's limiter middleware runs before its handlers.
 *
 * Without RATE_LIMIT_HEADER these GoTrue limits are off: behind a load balancer the socket's address is the balancer's, and
 * every user would share one bucket (GoTrue is off then too). A request without a value in the header is let
 * through with a warning, as in GoTrue. Refilled buckets are deleted by housekeeping (ExpiredRateLimits).
 */
export class RateLimits extends Effect.Service<RateLimits>()("auth/RateLimits", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const repo = yield* RateLimitsRepo
    const header = Option.fromNullable(clientHeaderName(platform.api.clientHeader))
    const { anonymousUsers, mfaChallengeAndVerify, oauthAuthorize, oauthClientRegister, otp, passkey, tokenRefresh, verify, verifyGuesses, web3 } = config.rateLimit
    const rates: Readonly<Record<RequestLimitName, RequestRate>> = {
      otp: requestRate(otp.events, otp.per, otp.burst),
      anonymous_users: requestRate(anonymousUsers.events, anonymousUsers.per, anonymousUsers.burst),
      token_refresh: requestRate(tokenRefresh.events, tokenRefresh.per, tokenRefresh.burst),
      verify: requestRate(verify.events, verify.per, verify.burst),
      verify_guesses: requestRate(verifyGuesses.events, verifyGuesses.per, verifyGuesses.burst),
      web3: requestRate(web3.events, web3.per, web3.burst),
      challenge_and_verify: requestRate(mfaChallengeAndVerify.events, mfaChallengeAndVerify.per, mfaChallengeAndVerify.burst),
      passkey: requestRate(passkey.events, passkey.per, passkey.burst),
      oauth_dynamic_client_register: requestRate(oauthClientRegister.events, oauthClientRegister.per, oauthClientRegister.burst),
      oauth_authorize: requestRate(oauthAuthorize.events, oauthAuthorize.per, oauthAuthorize.burst),
      sso: requestRate(config.rateLimit.sso.events, config.rateLimit.sso.per, config.rateLimit.sso.burst),
      // SAML_RATE_LIMIT_ASSERTION: per 5 minutes in bursts of 30, as GoTrue counts it.
      saml_assertion: requestRate(config.saml.rateLimitAssertion, Duration.minutes(5), 30)
    }

    const admit = (route: LimitedRoute, key: string) =>
      Effect.gen(function*() {
        const setting = SETTING_OF[route]
        const admission = yield* repo.admit(route, key, yield* Clock.currentTimeMillis, rates[setting])
        if (!admission.allowed) {
          yield* countTagged(AuthMetrics.rateLimited, "limit", setting)
          return yield* overRequestRate(admission.retryAfterMs)
        }
      })

    const checkKeyed = traced("RateLimits.check")(function*(
      headerName: string,
      route: LimitedRoute
    ): Effect.fn.Return<void, AuthError, HttpServerRequest.HttpServerRequest> {
      const request = yield* HttpServerRequest.HttpServerRequest
      const key = rateLimitKey(request.headers[headerName])
      if (key === undefined) {
        return yield* Effect.logWarning("request does not have a value for the rate limiting header, rate limiting is not applied").pipe(
          Effect.annotateLogs("header", headerName)
        )
      }
      yield* admit(route, key)
    })

    // With the limits off, the hot paths pay nothing for them, not even a span.
    const check: (route: LimitedRoute) => Effect.Effect<void, AuthError, HttpServerRequest.HttpServerRequest> = Option.match(header, {
      onNone: () => () => Effect.void,
      onSome: (name) => (route) => checkKeyed(name, route)
    })

    /**
     * POST /signup's limiter: GoTrue's Signups bucket (the OTP rate) with an email or a phone, AnonymousSignIns
     * without either. A disabled anonymous sign-in is not counted: GoTrue refuses it before its limiter, and so
     * does Signup here.
     */
    const checkSignup = (payload: {
      readonly email?: string | null | undefined
      readonly phone?: string | null | undefined
    }): Effect.Effect<void, AuthError, HttpServerRequest.HttpServerRequest> => {
      if ((payload.email ?? "") !== "" || (payload.phone ?? "") !== "") return check("signup")
      return config.anonymousUsersEnabled ? check("anonymous_signup") : Effect.void
    }

    /**
     * Charges one guessable verification (a typed code, a GoTrue-form link hash) to the client, refusing it past
     * RATE_LIMIT_VERIFY_GUESSES. Counted with or without RATE_LIMIT_HEADER: by its client when set, else by the
     * connection's peer. A random link token is never charged: it cannot be guessed, so a client that spent its
     * guesses (or shares a proxy's address with one that did) still follows its links.
     */
    const chargeGuess = traced("RateLimits.chargeGuess")(function*(): Effect.fn.Return<void, AuthError, HttpServerRequest.HttpServerRequest> {
      const request = yield* HttpServerRequest.HttpServerRequest
      const key = requestClient(request, Option.getOrUndefined(header))
      // Only a request with no socket (never over HTTP) has no peer; nothing can be counted against it.
      if (key !== undefined) yield* admit("verify_guess", key)
    })

    return { check, checkSignup, chargeGuess } as const
  }),
  dependencies: [RateLimitsRepo.Default]
}) {}
