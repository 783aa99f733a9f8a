import * as Layer from "effect/Layer"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AdminUsers } from "./AdminUsers.js"
import { AdminUsersHttpLive } from "./AdminUsersHttp.js"
import { AuditHttpLive } from "./AuditHttp.js"
import { GenerateLink } from "./GenerateLink.js"
import { GenerateLinkHttpLive } from "./GenerateLinkHttp.js"
import { RevokedSessionsHttpLive } from "./RevokedSessionsHttp.js"
import { EndedSessionsRepo } from "../sessions/EndedSessionsRepo.js"

/**
 * The admin API (users, generated links, the audit log, the revocation feed): its handlers behind the admin JWT check, over its services;
 * the shared floors come from AuthHttp.
 */
export const AdminLive = Layer.mergeAll(AdminUsersHttpLive, GenerateLinkHttpLive, AuditHttpLive, RevokedSessionsHttpLive).pipe(
  Layer.provide([AdminAuthenticatedLive, AdminUsers.Default, GenerateLink.Default, EndedSessionsRepo.Default])
)
