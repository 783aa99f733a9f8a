import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { Session, withSessionId } from "../contract/Session.js"
import { aalOfClaims, withSsoProvider } from "../domain/Assurance.js"
import type { UserRow } from "../domain/UserRow.js"
import { type AuditEvent, AuditLog } from "../users/AuditLog.js"
import { userJson } from "../users/UserJson.js"
import { type AuthMethod, Sessions, type StartedSession } from "./Sessions.js"
import { traced } from "../../platform/Traced.js"

// Built from values whose types already match the schema (the user by userJson, checked in UserJson.test): the
// constructor's Schema validation would only repeat that.
const trusted = true

/**
 * Turns a session into GoTrue's token response: a JWT with exactly GoTrue's claims (reference §4: aud as one
 * string, email and phone always present, amr as objects, no nbf or jti) plus the refresh token and the user.
 * It lives on the sessions floor because sign-up (with autoconfirm) and every grant issue sessions.
 */
export class AccessTokens extends Effect.Service<AccessTokens>()("auth/AccessTokens", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const signer = yield* TokenSigner
    const sessions = yield* Sessions
    const transactions = yield* Transactions
    const audit = yield* AuditLog
    // GoTrue leaves iss empty when JWT_ISSUER is unset; the external URL is a more useful default.
    const issuer = Option.getOrElse(config.jwt.issuer, () => platform.api.externalUrl)

    /** An OAuth client's session (`oauth`) mints tokens that also carry the client and its scopes. */
    const respond = traced("AccessTokens.respond")(function*(
      { amr, factors, identities, oauth, refreshToken, sessionId, user }: StartedSession
    ): Effect.fn.Return<Session> {
      const iat = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const exp = iat + config.jwt.exp
      const accessToken = yield* signer.sign({
        aud: user.aud ?? config.jwt.aud,
        exp,
        iat,
        iss: issuer,
        sub: user.id,
        email: user.email ?? "",
        phone: user.phone ?? "",
        app_metadata: user.raw_app_meta_data ?? {},
        user_metadata: user.raw_user_meta_data ?? {},
        role: user.role ?? "",
        // From the claims at every mint, so a refresh keeps the level the session was raised to.
        aal: aalOfClaims(amr),
        amr: withSsoProvider(amr, identities.map((identity) => identity.provider)),
        session_id: sessionId,
        is_anonymous: user.is_anonymous,
        ...oauth
      })
      // The session id rides along, so the response headers need not decode the token just signed (SessionHeaders).
      return withSessionId(
        new Session({
          access_token: accessToken,
          token_type: "bearer",
          expires_in: config.jwt.exp,
          expires_at: exp,
          refresh_token: refreshToken,
          user: userJson(user, identities, factors)
        }, trusted),
        sessionId
      )
    })

    /**
     * Starts a session for a user who just authenticated and answers with its tokens. `event` is the audit entry
     * the sign-in makes (GoTrue's `login`, with its traits), written in the session's transaction.
     */
    const issue = traced("AccessTokens.issue")(function*(
      user: UserRow,
      method: AuthMethod,
      at: Date,
      event?: AuditEvent,
      notAfter?: Date
    ): Effect.fn.Return<Session> {
      const started = yield* transactions.run(Effect.tap(sessions.start(user.id, method, at, notAfter), (session) =>
        event === undefined ? Effect.void : audit.record(event.action, { actor: session.user, traits: event.traits }))).pipe(Effect.orDie)
      return yield* respond(started)
    })

    return { respond, issue } as const
  }),
  dependencies: [Sessions.Default, AuditLog.Default, Transactions.Live]
}) {}
