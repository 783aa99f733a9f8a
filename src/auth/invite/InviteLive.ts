import * as Layer from "effect/Layer"
import { InviterAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { Invite } from "./Invite.js"
import { InviteHttpLive } from "./InviteHttp.js"

/** Invitations: its handler behind the inviter check, over its service; the shared floors come from AuthHttp. */
export const InviteLive = InviteHttpLive.pipe(Layer.provide([InviterAuthenticatedLive, Invite.Default]))
