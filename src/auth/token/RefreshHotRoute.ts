import type { IncomingMessage } from "node:http"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { type HotOutcome, type HotRoute, replayedRequest } from "../../platform/http/HotLane.js"
import { clientHeaderName } from "../../platform/http/RateLimitKey.js"
import { parseJsonBody, readNodeBody } from "../../platform/http/RequestBody.js"
import { sessionHeaders } from "../http/SessionHeaders.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { Sessions } from "../sessions/Sessions.js"

const URLS = new Set(["/token?grant_type=refresh_token", "/auth/v1/token?grant_type=refresh_token"])

// What auth-js sends, `{"refresh_token":"…"}`, is a few hundred bytes; anything larger is not a plain refresh.
const MAX_BODY = 4096

const JSON_TYPE = /^application\/json\s*(;|$)/i

/** The token of a body that is exactly `{"refresh_token": "<string>"}`; undefined for any other body. */
const plainRefreshToken = (text: string): Effect.Effect<string | undefined> =>
  parseJsonBody(text).pipe(
    Effect.map((body) => {
      if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined
      const keys = Object.keys(body)
      const token = (body as Record<string, unknown>)["refresh_token"]
      return keys.length === 1 && typeof token === "string" ? token : undefined
    }),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The refresh grant on the hot lane (platform/http/HotLane.ts): after GET /user the most frequent call (auth-js
 * refreshes every session before its access token expires). It answers only the plain rotation (Sessions.rotatePlain,
 * two statements, nothing changed unless it rotates), as TokenHttp answers it: the session from AccessTokens.respond
 * with its SessionHeaders, counted as a sign-in. Anything else (another body, a detour of the refresh rules, a
 * failure) goes to the API with the body it read (replayedRequest), which decides exactly as without the lane.
 * With RATE_LIMIT_HEADER set the grant is counted per client by the API: then every refresh goes there.
 * HotLaneParity.test compares the two.
 */
export const refreshHotRoute = Effect.gen(function*() {
  const sessions = yield* Sessions
  const tokens = yield* AccessTokens
  const limited = clientHeaderName((yield* PlatformConfig).api.clientHeader) !== undefined
  return (request: IncomingMessage) => {
    if (limited || request.method !== "POST" || !URLS.has(request.url ?? "")) return undefined
    if (!JSON_TYPE.test(request.headers["content-type"] ?? "") || request.headers["transfer-encoding"] !== undefined) return undefined
    const length = Number(request.headers["content-length"])
    if (!Number.isSafeInteger(length) || length < 0 || length > MAX_BODY) return undefined
    // Node stops a body at its Content-Length: the read cannot pass MAX_BODY. A client gone mid-body is the app's.
    return readNodeBody(request, MAX_BODY).pipe(
      Effect.flatMap((text) => {
        const handBack: HotOutcome = { handBack: replayedRequest(request, text) }
        return Effect.gen(function*() {
          const token = yield* plainRefreshToken(text)
          if (token === undefined) return handBack
          const rotated = yield* sessions.rotatePlain(token, new Date(yield* Clock.currentTimeMillis))
          if (rotated === undefined) return handBack
          const session = yield* tokens.respond(rotated)
          yield* countTagged(AuthMetrics.signIns, "grant_type", "refresh_token")
          const body = JSON.stringify(session)
          return {
            status: 200,
            headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...sessionHeaders(session) },
            body
          }
        }).pipe(
          // Whatever went wrong (a database error, even after the rotation), the API decides again from the start:
          // a rotation that committed makes its retry return the same child (the reuse interval), as a lost answer's.
          Effect.catchAllCause(() => Effect.succeed(handBack))
        )
      }),
      Effect.orElseSucceed((): HotOutcome => undefined)
    )
  }
}).pipe(Effect.map((route): HotRoute => route))
