import { createClient, type SupabaseClient, type SupabaseClientOptions } from "@supabase/supabase-js"
import { Effect, Redacted } from "effect"
import { AuthConfig } from "../../src/config/AuthConfig.js"
import { nowSeconds, signHs256 } from "../auth/acceptance/AcceptanceKit.js"
import { ServerUrl } from "./TestServer.js"

/**
 * supabase-js builds its realtime client eagerly and, on Node 20, insists on a WebSocket constructor. No test opens a
 * channel, so one that refuses to connect is enough.
 */
class NoWebSocket {
  constructor() {
    throw new Error("realtime is not part of these tests")
  }
}

let clients = 0

type AuthOptions = NonNullable<SupabaseClientOptions<"public">["auth"]>
type GlobalOptions = NonNullable<SupabaseClientOptions<"public">["global"]>

/**
 * `createClient(url, key)` against the test server as an app on a server configures it: no timers, no storage, no
 * session read from a URL; `global` as an app gives it (headers on every request, its own fetch). Each client has a
 * storage key of its own: while a test's software authenticator is installed auth-js believes it runs in a browser,
 * where clients sharing a key warn.
 */
export const supabaseClient = (url: string, key: string, auth: AuthOptions = {}, global: GlobalOptions = {}): SupabaseClient =>
  createClient(url, key, {
    global,
    auth: {
      autoRefreshToken: false,
      persistSession: false,
      detectSessionInUrl: false,
      storageKey: `sb-test-${++clients}`,
      ...auth
    },
    realtime: { transport: NoWebSocket as never }
  })

/** A key for `role` (anon, service_role) signed with the test server's JWT secret, as a project's keys are. */
export const projectKey = (role: "anon" | "service_role") =>
  Effect.map(AuthConfig, (config) => signHs256({ iss: "supabase", role, iat: nowSeconds() }, Redacted.value(config.jwt.secret)))

/** A supabase-js client of the test server with the project's `role` key. */
export const projectClient = (role: "anon" | "service_role" = "anon", auth: AuthOptions = {}) =>
  Effect.gen(function*() {
    return supabaseClient(yield* ServerUrl, yield* projectKey(role), auth)
  })
