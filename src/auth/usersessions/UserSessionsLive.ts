import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { UserSessions } from "../sessions/UserSessions.js"
import { AdminSessionsHttpLive, UserSessionsHttpLive } from "./UserSessionsHttp.js"

/** A user's sessions: the caller's routes behind the bearer check, the admin's behind the admin check. */
export const UserSessionsLive = Layer.mergeAll(UserSessionsHttpLive, AdminSessionsHttpLive).pipe(
  Layer.provide([AuthenticatedLive, AdminAuthenticatedLive, UserSessions.Default])
)
