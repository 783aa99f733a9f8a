import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"

export const AdminUsersHttpLive = HttpApiBuilder.group(AuthApi, "adminUsers", (handlers) =>
  Effect.succeed(
    handlers
      // Until MFA exists a user has no factors: an empty list, not a 404, so dashboards and auth-js keep working.
      .handle("listFactors", () => Effect.succeed([]))
  ))
