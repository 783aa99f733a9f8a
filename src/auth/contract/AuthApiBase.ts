import * as HttpApi from "@effect/platform/HttpApi"
import { AuthErrors } from "../http/AuthErrors.js"

/**
 * The auth API before its features: the id every feature's handlers are built against, and what every route can
 * answer. A feature's slice is this plus its own groups, so its handlers may fail as any route of the whole API may;
 * Api.ts adds every feature's groups to it.
 */
export const AuthApiBase = HttpApi.make("gatehouse")
  // What every route can answer: the decoder's and the body reader's refusals, the edge's body limit, an outage.
  .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
  .addError(AuthErrors.invalid(413, ["request_entity_too_large"]))
  .addError(AuthErrors.refused(503, ["database_unavailable"], "The database cannot be reached (GoTrue: 500); retry later."))
