import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Session } from "../contract/Session.js"
import type { User } from "../contract/User.js"

/**
 * A User or Session answered as it is, without HttpApi's Schema encode of the success value. Both classes hold
 * only JSON values with no transformation (strings, numbers, booleans, plain objects and arrays of them), so an
 * instance is already its own encoded form (UserJson.test proves it for any user row). On GET /user the encode
 * walked the whole user and its identities a second time and cost about a third of the request's CPU.
 */
export const encodedResponse = (value: User | Session): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(value)
