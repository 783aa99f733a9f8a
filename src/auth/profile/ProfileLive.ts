import * as Layer from "effect/Layer"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { Profile } from "./Profile.js"
import { ProfileHttpLive } from "./ProfileHttp.js"

/** The signed-in user: its handlers behind the bearer check, over its service; the shared floors come from AuthHttp. */
export const ProfileLive = ProfileHttpLive.pipe(Layer.provide([AuthenticatedLive, Profile.Default]))
