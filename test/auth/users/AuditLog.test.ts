import { HttpServerRequest } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { UserRow } from "../../../src/auth/domain/UserRow.js"
import { adminActor, AuditLog } from "../../../src/auth/users/AuditLog.js"
import { AuditLogRepo } from "../../../src/auth/users/AuditLogRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { testConfig } from "../../support/TestServer.js"
import { CurrentClient } from "../../../src/platform/http/CurrentClient.js"

/*
 * What AuditLog.record writes, over the in-memory repo and TestClock (so every entry is written in the same
 * millisecond, and only the ids order them).
 */

const user = (fields: Partial<UserRow>): UserRow => ({
  id: "11111111-1111-4111-8111-111111111111",
  email: "ada@example.com",
  phone: null,
  raw_user_meta_data: {},
  is_sso_user: false,
  ...fields
}) as UserRow

const auditOver = (env: Record<string, string> = {}) =>
  AuditLog.DefaultWithoutDependencies.pipe(
    Layer.provide(CurrentClient.Default),
    Layer.provideMerge(AuditLogRepo.Test),
    Layer.provide(SecureRandom.Live),
    Layer.provide(configLayer(testConfig(env)))
  )

/** Runs `effect` as if serving a request with these headers (a Web request has no socket peer). */
const serving = (headers: Record<string, string>) =>
  Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request("http://auth.test/token", { method: "POST", headers })))

layer(auditOver({ AUTH_RATE_LIMIT_HEADER: "X-Real-IP" }))("AuditLog ip_address", (it) => {
  it.effect("is the request's client by the rate limits' rule: RATE_LIMIT_HEADER's first value; empty outside a request or without one", () =>
    Effect.gen(function*() {
      const audit = yield* AuditLog
      const repo = yield* AuditLogRepo
      const login = (username: string) => audit.record("login", { actor: user({ email: username }) })
      yield* login("header@example.com").pipe(serving({ "x-real-ip": " 203.0.113.7 , 10.0.0.1" }))
      yield* login("unnamed@example.com").pipe(serving({ "x-forwarded-for": "198.51.100.1" }))
      yield* login("no-request@example.com")
      yield* audit.record("user_deleted", { actor: user({ email: "given@example.com" }), ip: "192.0.2.9" }).pipe(serving({ "x-real-ip": "203.0.113.7" }))
      const ipOf = (author: string) => Effect.map(repo.page(1, 1, { field: "author", value: author }), ({ entries }) => entries[0]!.ip_address)
      expect(yield* ipOf("header@")).toBe("203.0.113.7")
      // No X-Real-IP and no socket: nothing to record (over HTTP the connection's peer would be).
      expect(yield* ipOf("unnamed@")).toBe("")
      expect(yield* ipOf("no-request@")).toBe("")
      expect(yield* ipOf("given@")).toBe("192.0.2.9")
    }))
})

layer(auditOver())("AuditLog.record", (it) => {
  it.effect("writes GoTrue's payload: phone over email as the username, full_name as the name, the log type, the traits", () =>
    Effect.gen(function*() {
      const audit = yield* AuditLog
      const repo = yield* AuditLogRepo
      yield* audit.record("login", { actor: user({}), traits: { provider: "email" } })
      yield* audit.record("user_modified", { actor: user({ phone: "15550001", raw_user_meta_data: { full_name: "Ada L" }, is_sso_user: true }) })
      yield* audit.record("user_deleted", { actor: adminActor({ role: "service_role", sub: "x" }), traits: { user_id: "u-1" }, ip: "x".repeat(80) })
      const { entries, total } = yield* repo.page(1, 10, undefined)
      expect(total).toBe(3)
      expect(entries.map((e) => e.payload)).toEqual([
        { actor_id: "00000000-0000-0000-0000-000000000000", actor_username: "service_role", actor_via_sso: false, action: "user_deleted", log_type: "team", traits: { user_id: "u-1" } },
        { actor_id: user({}).id, actor_username: "15550001", actor_name: "Ada L", actor_via_sso: true, action: "user_modified", log_type: "user" },
        { actor_id: user({}).id, actor_username: "ada@example.com", actor_via_sso: false, action: "login", log_type: "account", traits: { provider: "email" } }
      ])
      expect(entries[0]!.ip_address).toBe("x".repeat(64))
      expect(entries.every((e) => e.created_at.getTime() === 0)).toBe(true)
      expect(entries.every((e) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(e.id))).toBe(true)
    }))

  it.effect("leaves out any trait whose key names a secret", () =>
    Effect.gen(function*() {
      const audit = yield* AuditLog
      const repo = yield* AuditLogRepo
      yield* audit.record("user_updated_password", {
        actor: user({ email: "secrets@example.com" }),
        traits: { provider: "email", password: "p", refresh_token: "t", client_secret: "s", nonce: "n", code_verifier: "v", token_hash: "h" }
      })
      const { entries } = yield* repo.page(1, 1, { field: "author", value: "secrets@" })
      expect(entries[0]!.payload["traits"]).toEqual({ provider: "email" })
    }))
})
