import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { JsonObject } from "../contract/JsonObject.js"

export class Health extends Schema.Class<Health>("Health")({
  version: Schema.String,
  name: Schema.String,
  description: Schema.String
}) {}

/** GoTrue v2.196's /settings, key for key: clients and dashboards read it, so it has no keys of our own. */
export class Settings extends Schema.Class<Settings>("Settings")({
  external: Schema.Record({ key: Schema.String, value: Schema.Boolean }),
  disable_signup: Schema.Boolean,
  autoconfirm: Schema.Boolean.annotations({
    description: "Whether an email sign-up is confirmed at once (MAILER_AUTOCONFIRM); the same value as mailer_autoconfirm, under the name the Settings object of the spec gives it"
  }),
  mailer_autoconfirm: Schema.Boolean,
  phone_autoconfirm: Schema.Boolean,
  sms_provider: Schema.String,
  saml_enabled: Schema.Boolean,
  saml_private_key_next_configured: Schema.Boolean,
  passkeys_enabled: Schema.Boolean
}) {}

export class SettingsGroup extends HttpApiGroup.make("settings")
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Health))
  .add(HttpApiEndpoint.get("settings", "/settings").addSuccess(Settings))
  .add(HttpApiEndpoint.get("jwks", "/.well-known/jwks.json").addSuccess(Schema.Struct({ keys: Schema.Array(JsonObject) })))
  .annotate(OpenApi.Title, "System")
  .annotate(OpenApi.Description, "Service health, public settings and signing keys") {}

/** The settings slice on its own: what its handlers are built against (Api.ts composes SettingsGroup into AuthApi). */
export const SettingsApi = AuthApiBase.add(SettingsGroup)
