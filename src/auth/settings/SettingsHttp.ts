import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { OAUTH_PROVIDERS } from "../../config/OAuthProviders.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { VERSION } from "../../Version.js"
import { AuthApi, Health, Settings } from "../Api.js"

export const settingsFor = (config: AppConfig): Settings =>
  new Settings({
    external: {
      anonymous_users: config.anonymousUsersEnabled,
      ...Object.fromEntries(OAUTH_PROVIDERS.map((name) => [name, config.external[name].enabled])),
      email: config.externalEmailEnabled,
      phone: config.externalPhoneEnabled
    },
    disable_signup: config.disableSignup,
    mailer_autoconfirm: config.mailer.autoconfirm,
    phone_autoconfirm: config.sms.autoconfirm,
    sms_provider: Option.getOrElse(config.sms.provider, () => ""),
    saml_enabled: false,
    saml_private_key_next_configured: false,
    passkeys_enabled: false
  })

const health = new Health({
  version: VERSION,
  name: "Gatehouse",
  description: "Gatehouse is a user registration and authentication API compatible with Supabase Auth"
})

export const SettingsHttpLive = HttpApiBuilder.group(AuthApi, "settings", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    // Settings cannot change while the process runs, so the response is built once.
    const settings = settingsFor(config)
    const signer = yield* TokenSigner
    const jwks = HttpServerResponse.unsafeJson(signer.jwks, { headers: { "cache-control": "public, max-age=600" } })
    return handlers
      .handle("health", () => Effect.succeed(health))
      .handle("settings", () => Effect.succeed(settings))
      .handle("jwks", () => Effect.succeed(jwks))
  }))
