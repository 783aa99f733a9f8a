import * as Layer from "effect/Layer"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { LogoutHttpLive } from "./LogoutHttp.js"

/** Logout: its handler behind the bearer check, over the sessions floor AuthHttp provides. */
export const LogoutLive = LogoutHttpLive.pipe(Layer.provide(AuthenticatedLive))
