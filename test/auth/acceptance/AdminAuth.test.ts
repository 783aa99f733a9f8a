/**
 * Who may call the admin API (reference §1, "Admin auth details"): a valid JWT whose role is in JWT_ADMIN_ROLES,
 * whatever its `sub`; everyone else gets GoTrue's codes. /admin/users/{id}/factors stands in for every admin route.
 */
import { describe, expect } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, nowSeconds, PASSWORD, raw, signHs256, uniqueEmail, versionedError } from "./AcceptanceKit.js"

/** A user to ask about: the route looks the user up before anything else it does. */
const someUser = Effect.flatMap(ServerUrl, (url) =>
  Effect.map(raw(url, "/admin/users", { bearer: adminJwt(), body: { email: uniqueEmail("factors") } }), (created) => created.json.id as string))

const factors = (bearer?: string, userId?: string) =>
  Effect.flatMap(ServerUrl, (url) =>
    Effect.flatMap(userId === undefined ? someUser : Effect.succeed(userId), (id) =>
      raw(url, `/admin/users/${id}/factors`, { apiVersion: true, ...(bearer === undefined ? {} : { bearer }) })))

describe("admin credentials", () => {
  acceptance({ AUTH_JWT_ADMIN_ROLES: "service_role,supabase_admin,ops", AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("an admin role passes whatever its sub; the factors of a user are an empty list", () =>
      Effect.gen(function*() {
        for (const token of [adminJwt(), adminJwt("supabase_admin", { sub: "1234567890" }), adminJwt("ops")]) {
          const response = yield* factors(token)
          expect([response.status, response.json]).toEqual([200, []])
        }
        // Also under /auth/v1, where supabase-js calls it.
        const url = yield* ServerUrl
        const prefixed = yield* raw(url, `/auth/v1/admin/users/${yield* someUser}/factors`, { bearer: adminJwt() })
        expect([prefixed.status, prefixed.json]).toEqual([200, []])
        // A user that does not exist (or no longer does) has no factors to list: 404, as GoTrue's loadUser answers.
        const unknown = yield* factors(adminJwt(), randomUUID())
        expect([unknown.status, unknown.json]).toEqual([404, versionedError("user_not_found", "User not found")])
      }))

    it.effect("no token is 401 no_authorization; a bad or expired one 403 bad_jwt; another role 403 not_admin", () =>
      Effect.gen(function*() {
        const none = yield* factors()
        expect([none.status, none.json]).toEqual([401, versionedError("no_authorization", "This endpoint requires a valid Bearer token")])
        const forged = yield* factors(signHs256({ role: "service_role" }, "not-the-secret-not-the-secret-not-the-secret"))
        expect([forged.status, forged.json?.code]).toEqual([403, "bad_jwt"])
        const expired = yield* factors(adminJwt("service_role", { exp: nowSeconds() - 10 }))
        expect([expired.status, expired.json?.code]).toEqual([403, "bad_jwt"])
        for (const claims of [{ role: "authenticated" }, { role: ["service_role"] }, {}]) {
          const token = signHs256({ exp: nowSeconds() + 60, ...claims }, "test-secret-that-is-at-least-32-characters-long")
          const refused = yield* factors(token)
          expect([refused.status, refused.json]).toEqual([403, versionedError("not_admin", "User not allowed")])
        }
      }))

    it.effect("a user's own access token is not an admin token, and an admin token naming a logged-out session stops working", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const signedUp = yield* call(() => client.signUp({ email: uniqueEmail("admin-auth"), password: PASSWORD }))
        const session = signedUp.data.session!
        const asUser = yield* factors(session.access_token)
        expect([asUser.status, asUser.json?.code]).toEqual([403, "not_admin"])
        const claims = JSON.parse(Buffer.from(session.access_token.split(".")[1]!, "base64url").toString("utf8"))
        const sessionBound = adminJwt("service_role", { sub: claims.sub, session_id: claims.session_id })
        expect((yield* factors(sessionBound)).status).toBe(200)
        yield* call(() => client.signOut())
        const after = yield* factors(sessionBound)
        expect([after.status, after.json?.code]).toEqual([403, "session_expired"])
      }))
  })
})
