import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { API_KEY_ROLES, apiKeyClaims, apiKeyIssuer } from "../auth/sessions/ApiKeys.js"
import type { AppConfig } from "../config/AppConfig.js"
import { TokenSigner } from "../platform/TokenSigner.js"
import { tokenSignerFor } from "../platform/PortsLive.js"

/**
 * `keys`: Supabase's two API keys, signed as the server signs access tokens, so they verify against it. The
 * embedded default's secret comes from the data directory, the same file the server reads. Returns the exit code.
 */
export const keysCommand = async (config: AppConfig): Promise<number> => {
  const program = Effect.gen(function*() {
    const signer = yield* TokenSigner
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const issuer = apiKeyIssuer(config.jwt.issuer, config.api.externalUrl)
    return yield* Effect.forEach(API_KEY_ROLES, (role) =>
      Effect.map(signer.sign(apiKeyClaims(role, issuer, now)), (key) => `${role} key: ${key}\n`))
  }).pipe(Effect.provide(tokenSignerFor(config)))
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    const failure = exit.cause._tag === "Fail" ? exit.cause.error.message : "unexpected error"
    process.stderr.write(`keys failed: ${failure}\n`)
    return 1
  }
  process.stdout.write(exit.value.join(""))
  process.stderr.write("The service_role key bypasses row-level security and acts as an admin: keep it secret, never ship it in an app.\n")
  return 0
}
