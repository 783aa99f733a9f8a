/**
 * The hot lane (src/platform/http/HotLane.ts: GetUserHotRoute.ts, RefreshHotRoute.ts) against the API it
 * skips: two servers over one database, one with the lane and one without, asked the same things. Every answer
 * must be the same bytes (status line, headers in order, body; only Date differs), and the requests the lane
 * should hand back must reach the app while the plain success must not.
 */
import { createServer, request as httpRequest } from "node:http"
import { expect } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import fc from "fast-check"
import { acceptance, adminJwt, nowSeconds, PASSWORD, raw, signHs256, uniqueEmail } from "../acceptance/AcceptanceKit.js"
import { baseTestEnv, ServerUrl, TestServerOver } from "../../support/TestServer.js"

const ENV = { AUTH_MAILER_AUTOCONFIRM: "true" }

interface Exchange {
  readonly statusLine: string
  /** Raw header lines in the order they were written, without Date. */
  readonly headers: ReadonlyArray<string>
  readonly body: string
}

/** One request over a fresh connection, read as the bytes a client gets. */
const exchange = (base: string, path: string, headers: Record<string, string>, method = "GET", body?: string) =>
  Effect.async<Exchange>((resume) => {
    const sent = httpRequest(`${base}${path}`, { method, headers, agent: false }, (response) => {
      let body = ""
      response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => {
        const lines: Array<string> = []
        for (let i = 0; i < response.rawHeaders.length; i += 2) {
          if (response.rawHeaders[i]!.toLowerCase() !== "date") lines.push(`${response.rawHeaders[i]}: ${response.rawHeaders[i + 1]}`)
        }
        resume(Effect.succeed({ statusLine: `${response.statusCode} ${response.statusMessage}`, headers: lines, body }))
      })
    })
    sent.on("error", (error) => resume(Effect.die(error)))
    sent.end(body)
  })

/**
 * Two servers over the test's database: one with the hot lane, whose Node server counts the requests the lane hands
 * to the app (its 'request' listeners hear only those), and one without.
 */
const laneAndApi = Effect.gen(function*() {
  const node = createServer()
  let reached = 0
  node.on("request", () => void reached++)
  const lane = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV, { node }))), ServerUrl)
  const api = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV, { hotLane: false }))), ServerUrl)
  return { lane, api, reachedApp: () => reached }
})

const signUp = (url: string, data?: unknown) =>
  Effect.map(raw(url, "/signup", { body: { email: uniqueEmail("hot"), password: PASSWORD, ...(data === undefined ? {} : { data }) } }), (response) => {
    expect(response.status).toBe(200)
    return response.json as { access_token: string; user: { id: string } }
  })

acceptance(ENV)("GET /user on the hot lane", (it) => {
  it.scoped("answers byte for byte as the API does, and hands every other request to it", () =>
    Effect.gen(function*() {
      const { api, lane, reachedApp } = yield* laneAndApi

      const same = (path: string, headers: Record<string, string>, expected: { readonly lane: boolean; readonly status: number }, method = "GET") =>
        Effect.gen(function*() {
          const before = reachedApp()
          const fast = yield* exchange(lane, path, headers, method)
          const slow = yield* exchange(api, path, headers, method)
          expect(fast, `${method} ${path} ${JSON.stringify(headers)}`).toEqual(slow)
          expect(fast.statusLine.startsWith(`${expected.status} `)).toBe(true)
          expect(reachedApp() - before, `${method} ${path}: reached the app`).toBe(expected.lane ? 0 : 1)
          return fast
        })

      const plain = yield* signUp(api, { display: "Zoë \u{1F600}", nested: { list: [1, "two", null, { x: true }] } })
      const bearer = { authorization: `Bearer ${plain.access_token}` }
      const taken = { lane: true, status: 200 }
      const user = yield* same("/user", bearer, taken)
      expect(JSON.parse(user.body).id).toBe(plain.user.id)
      yield* same("/auth/v1/user", bearer, taken)
      yield* same("/user", { ...bearer, origin: "http://app.example" }, taken)
      yield* same("/user", { ...bearer, "x-jwt-aud": "authenticated" }, taken)
      yield* same("/user", { ...bearer, "x-client-info": "supabase-js-node/2.0.0", apikey: "anything" }, taken)

      // With a factor: GET /user lists it.
      const enrolled = yield* raw(api, "/factors", { bearer: plain.access_token, body: { factor_type: "totp", friendly_name: "phone" } })
      expect(enrolled.status).toBe(200)
      yield* same("/user", bearer, taken)

      // Handed to the API, which answers them in GoTrue's envelope.
      yield* same("/user", { ...bearer, "x-jwt-aud": "someone-else" }, { lane: false, status: 400 })
      yield* same("/user?x=1", bearer, { lane: false, status: 200 })
      yield* same("/user", {}, { lane: false, status: 401 })
      yield* same("/user", { authorization: "Bearer not-a-jwt" }, { lane: false, status: 403 })
      yield* same("/user", { authorization: `Basic ${plain.access_token}` }, { lane: false, status: 401 })
      yield* same("/user", { ...bearer, "x-supabase-api-version": "2024-01-01", authorization: "Bearer x.y.z" }, { lane: false, status: 403 })
      yield* same("/user", { ...bearer, "content-length": "0" }, { lane: false, status: 200 })
      yield* same("/user", bearer, { lane: false, status: 200 }, "HEAD")
      yield* same("/user", { ...bearer, origin: "http://app.example", "access-control-request-method": "GET" }, { lane: false, status: 204 }, "OPTIONS")
      const expired = signHs256(
        { sub: plain.user.id, aud: "authenticated", role: "authenticated", exp: nowSeconds() - 10, iat: nowSeconds() - 3600 },
        baseTestEnv["AUTH_JWT_SECRET"]!
      )
      yield* same("/user", { authorization: `Bearer ${expired}` }, { lane: false, status: 403 })

      // A banned user, and a session that ended.
      const banned = yield* signUp(api)
      const ban = yield* raw(api, `/admin/users/${banned.user.id}`, { method: "PUT", bearer: adminJwt(), body: { ban_duration: "24h" } })
      expect(ban.status).toBe(200)
      yield* same("/user", { authorization: `Bearer ${banned.access_token}` }, { lane: false, status: 403 })
      const ended = yield* signUp(api)
      expect((yield* raw(api, "/logout", { method: "POST", bearer: ended.access_token })).status).toBe(204)
      yield* same("/user", { authorization: `Bearer ${ended.access_token}` }, { lane: false, status: 403 })

      // Whatever metadata a user has, the lane writes the same JSON.
      const metadata = fc.sample(
        fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 })
          .filter((value) => !JSON.stringify(value).includes("\\u0000")),
        12
      )
      for (const data of metadata) {
        const signedUp = yield* signUp(api, data)
        yield* same("/user", { authorization: `Bearer ${signedUp.access_token}` }, taken)
      }
    }))
})

/**
 * What differs between two answers of the same kind to two different users and sessions: ids, emails, times,
 * tokens. Replaced by placeholders, the rest must be the same bytes.
 */
const masked = (answer: Exchange, tokens: ReadonlyArray<string>): Exchange => {
  const mask = (text: string) =>
    tokens.reduce((t, token) => t.split(token).join("<token>"), text)
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
      .replace(/hot-[0-9a-f]{8}@example\.com/g, "<email>")
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g, "<time>")
      .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g, "<jwt>")
      .replace(/"expires_at":\d+/g, "\"expires_at\":<n>")
  return {
    statusLine: answer.statusLine,
    headers: answer.headers.map((line) =>
      /^(content-length|sb-auth-refresh-token-prefix):/i.test(line) ? line.replace(/: .*/, ": <n>") : mask(line)),
    body: mask(answer.body)
  }
}

acceptance(ENV)("the refresh grant on the hot lane", (it) => {
  it.scoped("answers as the API does, and hands every other refresh to it with its body", () =>
    Effect.gen(function*() {
      const { api, lane, reachedApp } = yield* laneAndApi
      const json = { "content-type": "application/json;charset=UTF-8", "x-supabase-api-version": "2024-01-01" }

      /**
       * The same request to both servers, each about a session of its own: `body` makes the body from that
       * session's refresh token. Returns both answers (the lane's first) and checks they match and where the
       * request went.
       */
      const same = (
        name: string,
        expected: { readonly lane: boolean; readonly status: number },
        request: (token: string) => { readonly path?: string; readonly headers?: Record<string, string>; readonly body: string },
        prepare: (server: string, token: string) => Effect.Effect<string> = (_server, token) => Effect.succeed(token)
      ) =>
        Effect.gen(function*() {
          const answers: Array<Exchange> = []
          const tokens: Array<string> = []
          for (const server of [lane, api]) {
            const session = yield* signUp(server)
            const token = yield* prepare(server, (session as unknown as { refresh_token: string }).refresh_token)
            const { body, headers = json, path = "/token?grant_type=refresh_token" } = request(token)
            const before = reachedApp()
            const answer = yield* exchange(server, path, headers, "POST", body)
            if (server === lane) expect(reachedApp() - before, `${name}: reached the app`).toBe(expected.lane ? 0 : 1)
            answers.push(answer)
            const issued = (() => {
              try {
                return JSON.parse(answer.body).refresh_token as string | undefined
              } catch {
                return undefined
              }
            })()
            tokens.push(token, ...(issued === undefined ? [] : [issued]))
          }
          expect(answers[0]!.statusLine.startsWith(`${expected.status} `), `${name}: ${answers[0]!.statusLine} ${answers[0]!.body}`).toBe(true)
          expect(masked(answers[0]!, tokens), name).toEqual(masked(answers[1]!, tokens))
          return answers
        })

      const plain = (token: string) => ({ body: JSON.stringify({ refresh_token: token }) })
      const taken = { lane: true, status: 200 }
      const [rotated] = yield* same("plain refresh", taken, plain)
      expect(JSON.parse(rotated!.body).user.email).toMatch(/^hot-/)
      yield* same("under /auth/v1", taken, (token) => ({ ...plain(token), path: "/auth/v1/token?grant_type=refresh_token" }))
      yield* same("from a browser", taken, (token) => ({ ...plain(token), headers: { ...json, origin: "http://app.example" } }))
      yield* same("plain application/json", taken, (token) => ({ ...plain(token), headers: { "content-type": "application/json" } }))
      // A session refreshed once already: its second token rotates on the lane too.
      const refreshed = (server: string, token: string) =>
        Effect.map(raw(server, "/token?grant_type=refresh_token", { body: { refresh_token: token } }), (r) => r.json.refresh_token as string)
      yield* same("a child token", taken, plain, refreshed)

      const handed = (status: number) => ({ lane: false, status })
      yield* same("another key beside the token", handed(200), (token) => ({ body: JSON.stringify({ refresh_token: token, extra: 1 }) }))
      yield* same("not JSON", handed(400), (token) => ({ body: `{"refresh_token":"${token}"` }))
      yield* same("an empty token", handed(400), () => ({ body: JSON.stringify({ refresh_token: "" }) }))
      yield* same("an unknown token", handed(400), () => ({ body: JSON.stringify({ refresh_token: "abcdefghijkl" }) }))
      yield* same("not a string", handed(400), () => ({ body: JSON.stringify({ refresh_token: 12 }) }))
      yield* same("an array", handed(400), () => ({ body: "[]" }))
      yield* same("a query besides the grant", handed(200), (token) => ({ ...plain(token), path: "/token?grant_type=refresh_token&x=1" }))
      yield* same("text/plain", handed(200), (token) => ({ ...plain(token), headers: { "content-type": "text/plain" } }))
      // Used once already, within the reuse interval: the API returns the same child (a detour of the rules).
      const usedOnce = (server: string, token: string) => Effect.as(refreshed(server, token), token)
      yield* same("a token used once already", handed(200), plain, usedOnce)
      // A banned user's token: refused by the API.
      const bannedToken = (server: string, token: string) =>
        Effect.gen(function*() {
          const user = yield* raw(server, "/token?grant_type=refresh_token", { body: { refresh_token: token } })
          const ban = yield* raw(server, `/admin/users/${user.json.user.id}`, { method: "PUT", bearer: adminJwt(), body: { ban_duration: "24h" } })
          expect(ban.status).toBe(200)
          return user.json.refresh_token as string
        })
      yield* same("a banned user", handed(400), plain, bannedToken)
    }))
})
