import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { databaseProbe } from "../../platform/sql/DatabaseProbe.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { VERSION } from "../../Package.js"
import { AuthError } from "../domain/AuthError.js"
import { OAUTH_PROVIDERS, providerSettings } from "../oauth/OAuthProviders.js"
import { Health, Settings, SettingsApi } from "./SettingsApi.js"

export const settingsFor = (config: AuthConfig): Settings =>
  new Settings({
    external: {
      anonymous_users: config.anonymousUsersEnabled,
      ...Object.fromEntries(OAUTH_PROVIDERS.map((name) => [name, providerSettings(config, name).enabled])),
      email: config.externalEmailEnabled,
      phone: config.externalPhoneEnabled,
      // Gatehouse's own, asked for by issue 29: GoTrue v2.196 has no Web3 flag in /settings. They sit among the
      // providers' switches, where a client looking for what it may offer reads, and add no top-level key.
      web3_ethereum: config.web3.ethereum.enabled,
      web3_solana: config.web3.solana.enabled
    },
    disable_signup: config.disableSignup,
    autoconfirm: config.mailer.autoconfirm,
    mailer_autoconfirm: config.mailer.autoconfirm,
    phone_autoconfirm: config.sms.autoconfirm,
    sms_provider: Option.getOrElse(config.sms.provider, () => ""),
    saml_enabled: config.saml.enabled,
    saml_private_key_next_configured: Option.isSome(config.saml.nextPrivateKey),
    passkeys_enabled: config.passkey.enabled
  })

const health = new Health({
  version: VERSION,
  name: "Gatehouse",
  description: "Gatehouse is a user registration and authentication API compatible with Supabase Auth"
})

export const SettingsHttpLive = HttpApiBuilder.group(SettingsApi, "settings", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AuthConfig
    // Settings cannot change while the process runs, so the response is built once.
    const settings = settingsFor(config)
    const signer = yield* TokenSigner
    // A load balancer takes an instance out when its health fails: an instance that cannot reach the database
    // can answer nothing but errors. The probe is bounded, so a hung connection fails the check instead of
    // holding it; what went wrong is the server's to log, never the prober's to read.
    const probe = yield* databaseProbe
    const databaseReachable = probe.pipe(
      Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "timeout" as const }),
      Effect.tapError((error) => Effect.logWarning("health: the database did not answer").pipe(
        Effect.annotateLogs("reason", error === "timeout" ? "no answer within 2s" : error.message)
      )),
      Effect.mapError(() => AuthError.databaseUnavailable())
    )
    const jwks = HttpServerResponse.unsafeJson(signer.jwks, { headers: { "cache-control": "public, max-age=600" } })
    return handlers
      .handle("health", () => Effect.as(databaseReachable, health))
      .handle("settings", () => Effect.succeed(settings))
      .handle("jwks", () => Effect.succeed(jwks))
  }))
