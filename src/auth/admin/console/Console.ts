import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../../config/AuthConfig.js"
import { Transactions } from "../../../platform/sql/Transactions.js"
import { SecureRandom } from "../../../platform/SecureRandom.js"
import type { User } from "../../contract/User.js"
import { AuthError } from "../../domain/AuthError.js"
import {
  type ConsoleSession,
  consoleKeys,
  formToken,
  formTokenMatches,
  openSession,
  sealSession,
  sessionExpiry
} from "../../domain/ConsoleSession.js"
import { bannedUntil, parseBanDuration } from "../../domain/BanDuration.js"
import { parsePage } from "../../domain/Pagination.js"
import { adminTokenCheck } from "../../http/AdminAuthenticatedLive.js"
import { AuthMessages } from "../../messages/AuthMessages.js"
import { Confirmations } from "../../messages/Confirmations.js"
import { FlowStateRepo } from "../../sessions/FlowStateRepo.js"
import { type SessionSummary, SessionsRepo } from "../../sessions/SessionsRepo.js"
import { UserSessions } from "../../sessions/UserSessions.js"
import { type AuditActor, AuditLog, adminActor } from "../../users/AuditLog.js"
import { type AuditLogEntry, AuditLogRepo, parseAuditQuery } from "../../users/AuditLogRepo.js"
import { PendingTokens } from "../../users/PendingTokens.js"
import { pathUser } from "../../users/PathUser.js"
import { Users } from "../../users/Users.js"
import { UsersRepo } from "../../users/UsersRepo.js"
import { AdminUsers } from "../AdminUsers.js"
import { ConsoleIam, type IamDirectory } from "./ConsoleIam.js"
import { UUID_PATTERN } from "../../domain/ClientCredentials.js"
import { traced } from "../../../platform/Traced.js"

/** A signed-in console request: its session, and the cookie it came in (the form token is derived from it). */
export interface ConsoleVisit {
  readonly session: ConsoleSession
  readonly cookie: string
}

export type AuditField = "author" | "action" | "type"

export interface UserListing {
  readonly users: ReadonlyArray<User>
  readonly page: number
  readonly perPage: number
  readonly total: number
}

export interface AuditListing {
  readonly entries: ReadonlyArray<AuditLogEntry>
  readonly page: number
  readonly perPage: number
  readonly total: number
}

/** Rows a console page lists: a page a phone scrolls through comfortably. */
const PER_PAGE = 25

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * The admin console's work, over the same services the admin API uses: AdminUsers for listing, banning and deleting
 * (so a ban or a deletion writes the admin API's audit entries and ends the sessions as it does), the audit log's
 * repo for its page, the sessions floor for ending sessions, and the mail flow /recover uses for recovery.
 */
export class Console extends Effect.Service<Console>()("auth/Console", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const random = yield* SecureRandom
    const admin = yield* AdminUsers
    const users = yield* UsersRepo
    const sessions = yield* SessionsRepo
    const userSessions = yield* UserSessions
    const auditLog = yield* AuditLogRepo
    const confirmations = yield* Confirmations
    const iam = yield* ConsoleIam
    const checkKey = yield* adminTokenCheck(new Set(config.jwt.adminRoles))
    const keys = consoleKeys(Redacted.value(config.jwt.secret))
    const lifetimeSeconds = Math.floor(Duration.toSeconds(config.adminConsole.sessionLifetime))
    const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

    /** The admin key checked as the admin API checks a bearer token; the session it starts, sealed for the cookie. */
    const signIn = traced("Console.signIn")(function*(key: string): Effect.fn.Return<ConsoleVisit, AuthError> {
      const trimmed = key.trim()
      if (trimmed === "") return yield* AuthError.validation("Paste the service_role key to sign in")
      const { claims } = yield* checkKey(trimmed)
      const now = yield* nowSeconds
      const sub = claims["sub"]
      const sessionId = claims["session_id"]
      const exp = claims["exp"]
      const session: ConsoleSession = {
        role: String(claims["role"]),
        // As adminTokenCheck: a key names a session only with a UUID sub and session_id.
        boundTo: typeof sub === "string" && typeof sessionId === "string" && sessionId !== NIL_UUID && UUID_PATTERN.test(sub) && UUID_PATTERN.test(sessionId)
          ? { userId: sub.toLowerCase(), sessionId: sessionId.toLowerCase() }
          : undefined,
        issuedAt: now,
        expiresAt: sessionExpiry(now, lifetimeSeconds, typeof exp === "number" ? Math.floor(exp) : undefined),
        nonce: (yield* random.bytes(18)).toString("base64url")
      }
      return { session, cookie: sealSession(keys, session) }
    })

    /**
     * The visit a cookie stands for, when this server signed it and it is still good; a session started with a key
     * bound to a user's session lasts only while that session does, as the admin API's check of the key would.
     */
    const visit = traced("Console.visit")(function*(cookie: string | undefined): Effect.fn.Return<Option.Option<ConsoleVisit>> {
      const session = openSession(keys, cookie, yield* nowSeconds)
      if (session === undefined) return Option.none()
      if (session.boundTo !== undefined) {
        const found = yield* sessions.findForSession(session.boundTo.userId, session.boundTo.sessionId)
        if (Option.isNone(found) || !found.value.sessionExists) return Option.none()
      }
      return Option.some({ session, cookie: cookie! })
    })

    const formTokenOf = (visit: ConsoleVisit): string => formToken(keys, visit.cookie)
    const formTokenValid = (visit: ConsoleVisit, submitted: string | undefined): boolean => formTokenMatches(keys, visit.cookie, submitted)

    /** Who the audit log says acted: the key's role, as for the admin API. */
    const actorOf = (visit: ConsoleVisit): AuditActor => adminActor({ role: visit.session.role })

    const pageNumber = (raw: string | undefined) =>
      Either.mapLeft(parsePage(raw === undefined || /^[0-9]{1,6}$/.test(raw) ? raw : "", String(PER_PAGE)), AuthError.validation)

    const listUsers = traced("Console.listUsers")(function*(filter: string, page: string | undefined): Effect.fn.Return<UserListing, AuthError> {
      const found = yield* admin.list({ filter, page: (yield* pageNumber(page)).page.toString(), perPage: String(PER_PAGE) })
      return { users: found.users, page: found.page.page, perPage: found.page.perPage, total: found.total }
    })

    const user = traced("Console.user")(function*(id: string): Effect.fn.Return<{ readonly user: User; readonly sessions: ReadonlyArray<SessionSummary> }, AuthError> {
      const found = yield* admin.get(id)
      return { user: found, sessions: yield* userSessions.summaries(found.id, new Date(yield* Clock.currentTimeMillis)) }
    })

    /** PUT /admin/users/{id} with `ban_duration`: the same parse, audit entry (user_modified) and ended sessions. */
    const ban = traced("Console.ban")(function*(visit: ConsoleVisit, id: string, duration: string): Effect.fn.Return<void, AuthError> {
      // The admin API's own parse says what is wrong with a malformed one; a duration that bans nobody (none, 0s,
      // a negative one) would lift a ban or do nothing under a button that says Ban.
      const parsed = parseBanDuration(duration.trim())
      const at = new Date(yield* Clock.currentTimeMillis)
      if (duration.trim() === "") return yield* AuthError.validation("A ban needs a duration, such as 24h")
      if (Either.isRight(parsed)) {
        const until = bannedUntil(parsed.right, at)
        if (until === null || until <= at) return yield* AuthError.validation("A ban needs a duration longer than zero, such as 24h")
      }
      yield* admin.update(id, { ban_duration: duration.trim() }, actorOf(visit))
    })

    const unban = traced("Console.unban")(function*(visit: ConsoleVisit, id: string): Effect.fn.Return<void, AuthError> {
      yield* admin.update(id, { ban_duration: "none" }, actorOf(visit))
    })

    /** DELETE /admin/users/{id}: its audit entry (user_deleted) and the same cleanup, hard or soft. */
    const remove = traced("Console.remove")(function*(visit: ConsoleVisit, id: string, soft: boolean): Effect.fn.Return<void, AuthError> {
      yield* admin.remove(id, soft, actorOf(visit))
    })

    /**
     * Signs the user out everywhere. The admin API has no such route (supabase-js's admin.signOut posts the user's
     * own JWT to /logout?scope=global), so the entry is /logout's (`logout`, scope global), with the admin as its
     * actor and the user in its traits, as an admin's entries name the user acted on.
     */
    const endSessions = traced("Console.endSessions")(function*(visit: ConsoleVisit, id: string): Effect.fn.Return<void, AuthError> {
      yield* userSessions.endAllOfUser(id, actorOf(visit))
    })

    /** The mail POST /recover sends a known address (its window, its token, its audit entry), to the site URL. */
    const sendRecovery = traced("Console.sendRecovery")(function*(id: string): Effect.fn.Return<void, AuthError> {
      const found = yield* pathUser(users, id)
      if ((found.email ?? "") === "") return yield* AuthError.validation("The user has no email address")
      if (found.deleted_at !== null) return yield* AuthError.of(404, "user_not_found", "User not found")
      yield* confirmations.sendLink(found, "recovery", config.siteUrl, new Date(yield* Clock.currentTimeMillis))
    })

    const auditPage = traced("Console.auditPage")(function*(page: string | undefined, field: AuditField, value: string): Effect.fn.Return<AuditListing, AuthError> {
      const paging = yield* pageNumber(page)
      const query = yield* Either.mapLeft(parseAuditQuery(value === "" ? undefined : `${field}:${value}`), AuthError.validation)
      const { entries, total } = yield* auditLog.page(paging.page, paging.perPage, query)
      return { entries, page: paging.page, perPage: paging.perPage, total }
    })

    const iamDirectory: Effect.Effect<IamDirectory | undefined> = Option.match(iam.directory, {
      onNone: () => Effect.succeed(undefined),
      onSome: (read) => read
    })

    return {
      signIn, visit, formTokenOf, formTokenValid, listUsers, user, ban, unban, remove, endSessions, sendRecovery, auditPage, iamDirectory
    } as const
  }),
  dependencies: [
    AdminUsers.Default,
    UsersRepo.Default,
    SessionsRepo.Default,
    Users.Default,
    UserSessions.Default,
    AuditLog.Default,
    AuditLogRepo.Default,
    FlowStateRepo.Default,
    PendingTokens.Default,
    AuthMessages.Default,
    Transactions.Live
  ]
}) {}
