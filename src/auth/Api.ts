import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuthError } from "./domain/AuthError.js"

export class Health extends Schema.Class<Health>("Health")({
  version: Schema.String,
  name: Schema.String,
  description: Schema.String
}) {}

export class Settings extends Schema.Class<Settings>("Settings")({
  external: Schema.Record({ key: Schema.String, value: Schema.Boolean }),
  disable_signup: Schema.Boolean,
  mailer_autoconfirm: Schema.Boolean,
  phone_autoconfirm: Schema.Boolean,
  /** The spec's name for mailer_autoconfirm; older clients read it. */
  autoconfirm: Schema.Boolean,
  sms_provider: Schema.String,
  saml_enabled: Schema.Boolean
}) {}

export class SystemGroup extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Health))
  .add(HttpApiEndpoint.get("settings", "/settings").addSuccess(Settings))
  .annotate(OpenApi.Title, "System")
  .annotate(OpenApi.Description, "Service health and public settings") {}

/** The auth server's HTTP contract (Supabase Auth wire-compatible). Handlers implement it; OpenAPI comes from it. */
export class AuthApi extends HttpApi.make("gatehouse")
  .add(SystemGroup)
  .addError(AuthError)
  .annotate(OpenApi.Title, "Gatehouse Auth")
  .annotate(OpenApi.Description, "A Supabase Auth (GoTrue) compatible authentication server") {}
