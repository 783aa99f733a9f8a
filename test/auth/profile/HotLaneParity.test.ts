/**
 * GET /user's hot lane (src/platform/http/HotLane.ts, src/auth/profile/GetUserHotRoute.ts) against the API it
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
const exchange = (base: string, path: string, headers: Record<string, string>, method = "GET") =>
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
    sent.end()
  })

const signUp = (url: string, data?: unknown) =>
  Effect.map(raw(url, "/signup", { body: { email: uniqueEmail("hot"), password: PASSWORD, ...(data === undefined ? {} : { data }) } }), (response) => {
    expect(response.status).toBe(200)
    return response.json as { access_token: string; user: { id: string } }
  })

acceptance(ENV)("GET /user on the hot lane", (it) => {
  it.scoped("answers byte for byte as the API does, and hands every other request to it", () =>
    Effect.gen(function*() {
      const node = createServer()
      let reachedApp = 0
      node.on("request", () => void reachedApp++)
      const lane = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV, { node }))), ServerUrl)
      const api = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV, { hotLane: false }))), ServerUrl)

      const same = (path: string, headers: Record<string, string>, expected: { readonly lane: boolean; readonly status: number }, method = "GET") =>
        Effect.gen(function*() {
          const before = reachedApp
          const fast = yield* exchange(lane, path, headers, method)
          const slow = yield* exchange(api, path, headers, method)
          expect(fast, `${method} ${path} ${JSON.stringify(headers)}`).toEqual(slow)
          expect(fast.statusLine.startsWith(`${expected.status} `)).toBe(true)
          expect(reachedApp - before, `${method} ${path}: reached the app`).toBe(expected.lane ? 0 : 1)
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
