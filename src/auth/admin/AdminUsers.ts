import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { User } from "../contract/User.js"
import type { AdminUserPayload } from "./AdminUsersApi.js"
import { AuthError } from "../domain/AuthError.js"
import { bannedUntil, parseBanDuration } from "../domain/BanDuration.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { mergeMetadata } from "../domain/MergeMetadata.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import { obfuscatedAddress } from "../domain/ObfuscatedAddress.js"
import { type Page, parsePage } from "../domain/Pagination.js"
import { enforcePasswordPolicy } from "../domain/PasswordPolicy.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import type { UserRow } from "../domain/UserRow.js"
import { PasskeyCredentialsRepo } from "../webauthn/PasskeyCredentialsRepo.js"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { RefreshTokensRepo } from "../sessions/RefreshTokensRepo.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"
import { type AuditActor, AuditLog, subjectTraits } from "../users/AuditLog.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { userJson } from "../users/UserJson.js"
import { Users } from "../users/Users.js"
import { type UniqueViolation, type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { pathUser } from "../users/PathUser.js"
import { traced } from "../../platform/Traced.js"

export type AdminUserRequest = typeof AdminUserPayload.Type

export interface UserListRequest {
  /** The X-JWT-AUD header: the audience to list, instead of JWT_AUD (GoTrue's requestAud). */
  readonly aud?: string | undefined
  readonly page?: string | undefined
  readonly perPage?: string | undefined
  readonly filter?: string | undefined
}

export interface UserPage {
  readonly users: ReadonlyArray<User>
  readonly aud: string
  readonly page: Page
  readonly total: number
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

// What an imported hash must look like: bcrypt, the one scheme PasswordHasher verifies.
const BCRYPT = /^\$2[aby]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/

const emailExists = AuthError.of(422, "email_exists", "Email address already registered by another user")
const phoneExists = AuthError.of(422, "phone_exists", "Phone number already registered by another user")

const given = (value: string | null | undefined): string => value ?? ""

/**
 * The admin users API (reference §2.16), with the two departures from GoTrue: the password policy holds
 * on create as well as update, and a ban also ends the user's sessions, so a banned user's refresh tokens and
 * session-bound access tokens stop at once rather than at their next check.
 */
export class AdminUsers extends Effect.Service<AdminUsers>()("auth/AdminUsers", {
  effect: Effect.gen(function*() {
    const random = yield* SecureRandom
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const newUsers = yield* Users
    const identities = yield* IdentitiesRepo
    const sessions = yield* SessionsRepo
    const refreshTokens = yield* RefreshTokensRepo
    const hasher = yield* PasswordHasher
    const audit = yield* AuditLog
    const pending = yield* PendingTokens
    const factors = yield* FactorsRepo
    const passkeys = yield* PasskeyCredentialsRepo
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const toJson = (user: UserRow) =>
      Effect.map(Effect.all([identities.forUser(user.id), factors.forUser(user.id)]), ([rows, owned]) => userJson(user, rows, owned))

    /** Commits `effect`'s writes together; an address another writer took meanwhile is `clash`, GoTrue's 422. */
    const commit = <A>(effect: Effect.Effect<A, AuthError | UniqueViolation>, clash: AuthError) =>
      transactions.run(effect).pipe(
        Effect.catchTags({
          UniqueViolation: () => Effect.fail(clash),
          SqlError: (error) => Effect.die(error)
        })
      )

    const load = (raw: string): Effect.Effect<UserRow, AuthError> => pathUser(users, raw)

    const email = (raw: string) => Either.mapLeft(parseEmail(raw), (problem) => AuthError.validation(emailProblemMessage[problem]))
    const phone = (raw: string) =>
      Option.match(normalizePhone(raw), { onNone: () => Either.left(AuthError.validation(invalidPhoneMessage)), onSome: Either.right })

    const ban = (raw: string | null | undefined, at: Date) =>
      given(raw) === ""
        ? Either.right(undefined)
        : Either.map(Either.mapLeft(parseBanDuration(raw!), AuthError.validation), (duration) => bannedUntil(duration, at))

    const checkMetadata = (user: Record<string, unknown>, app: Record<string, unknown>) =>
      Option.match(metadataTooLarge(user, app), { onNone: () => Either.void, onSome: (message) => Either.left(AuthError.validation(message)) })

    /** The stored password: the given one (policy-checked) hashed, an imported bcrypt hash, or a random one. */
    const passwordFor = (request: AdminUserRequest) =>
      Effect.gen(function*() {
        const password = given(request.password)
        const hash = given(request.password_hash)
        if (password !== "" && hash !== "") return yield* AuthError.validation("Only a password or a password hash should be provided")
        if (hash !== "") {
          if (!BCRYPT.test(hash)) return yield* AuthError.validation("Invalid password hash format: only bcrypt hashes are supported")
          return hash
        }
        if (password !== "") yield* enforcePasswordPolicy(password, config.password)
        // No password given: one nobody knows, as GoTrue does, so the account is reachable only by other means.
        return yield* hasher.hash(Redacted.make(password !== "" ? password : (yield* random.bytes(48)).toString("base64url")))
      })

    const list = traced("AdminUsers.list")(function*(request: UserListRequest): Effect.fn.Return<UserPage, AuthError> {
      const page = yield* Either.mapLeft(parsePage(request.page, request.perPage), AuthError.validation)
      const aud = given(request.aud) !== "" ? request.aud! : config.jwt.aud
      // The total and the page with each user's identities and factors: two small statements (one when filtered), not four.
      const found = yield* users.list({ aud, filter: request.filter ?? "", page: page.page, perPage: page.perPage })
      return { users: found.users.map((user) => userJson(user, user.identities, user.factors)), aud, page, total: found.total }
    })

    /** `requestAud`: the X-JWT-AUD header, which the body's `aud` overrides (GoTrue's order). */
    const create = traced("AdminUsers.create")(function*(
      request: AdminUserRequest,
      pathId: string | undefined,
      requestAud: string | undefined,
      actor: AuditActor
    ): Effect.fn.Return<User, AuthError> {
      const at = yield* now
      const bodyId = given(request.id)
      if (pathId !== undefined && bodyId !== "" && bodyId.toLowerCase() !== pathId.toLowerCase()) {
        return yield* AuthError.validation("The id in the body differs from the one in the path")
      }
      const rawId = pathId ?? bodyId
      if (rawId !== "" && !UUID.test(rawId)) return yield* AuthError.validation("ID must conform to the uuid v4 format")
      if (rawId === NIL_UUID) return yield* AuthError.validation("ID cannot be a nil uuid")
      const id = rawId === "" ? undefined : rawId.toLowerCase()

      const rawEmail = given(request.email)
      const rawPhone = given(request.phone)
      if (rawEmail === "" && rawPhone === "") return yield* AuthError.validation("Cannot create a user without either an email or phone")
      const address = rawEmail === "" ? null : yield* email(rawEmail)
      const number = rawPhone === "" ? null : yield* phone(rawPhone)
      const userMetadata = request.user_metadata ?? {}
      yield* checkMetadata(userMetadata, request.app_metadata ?? {})
      const banned = yield* ban(request.ban_duration, at)
      if (id !== undefined && Option.isSome(yield* users.findById(id))) {
        return yield* AuthError.of(422, "user_already_exists", "User already registered")
      }
      if (address !== null && (yield* users.isTaken("email", address, NIL_UUID))) return yield* emailExists
      if (number !== null && (yield* users.isTaken("phone", number, NIL_UUID))) return yield* phoneExists
      const encryptedPassword = yield* passwordFor(request)

      const providers = [...(address !== null ? ["email" as const] : []), ...(number !== null ? ["phone" as const] : [])]
      const created = yield* commit(
        Effect.gen(function*() {
          const row = yield* newUsers.create({
            ...(id === undefined ? {} : { id }),
            aud: given(request.aud) !== "" ? request.aud! : given(requestAud) !== "" ? requestAud! : config.jwt.aud,
            role: given(request.role) !== "" ? request.role! : config.jwt.defaultGroupName,
            email: address,
            phone: number,
            encryptedPassword,
            userMetadata,
            provider: providers[0]!,
            providers,
            emailConfirmedAt: request.email_confirm === true && address !== null ? at : null,
            phoneConfirmedAt: request.phone_confirm === true && number !== null ? at : null,
            isAnonymous: false,
            madeBy: "admin",
            now: at
          })
          const patch: UserPatch = {
            ...(request.app_metadata != null ? { raw_app_meta_data: mergeMetadata(row.raw_app_meta_data ?? {}, request.app_metadata) } : {}),
            ...(banned !== undefined ? { banned_until: banned } : {})
          }
          const made = Object.keys(patch).length > 0 ? yield* users.update(row.id, patch, at) : row
          yield* audit.record("user_signedup", { actor, traits: { ...subjectTraits(made), provider: providers[0]! } })
          return made
        }),
        address !== null ? emailExists : phoneExists
      )
      return yield* toJson(created)
    })

    const get = traced("AdminUsers.get")(function*(rawId: string): Effect.fn.Return<User, AuthError> {
      return yield* toJson(yield* load(rawId))
    })

    const update = traced("AdminUsers.update")(function*(
      rawId: string,
      request: AdminUserRequest,
      actor: AuditActor
    ): Effect.fn.Return<User, AuthError> {
      const at = yield* now
      const user = yield* load(rawId)
      const patch: Record<string, unknown> = {}
      const role = given(request.role)
      if (role !== "") patch["role"] = role
      // Confirming also marks the address verified in user_metadata, as GoTrue's Confirm and ConfirmPhone do.
      const verified: Record<string, unknown> = {}
      if (request.email_confirm === true && user.email_confirmed_at === null) {
        Object.assign(patch, { email_confirmed_at: at, confirmation_token: "" })
        verified["email_verified"] = true
      }
      if (request.phone_confirm === true && user.phone_confirmed_at === null) {
        patch["phone_confirmed_at"] = at
        verified["phone_verified"] = true
      }

      const rawEmail = given(request.email)
      const address = rawEmail === "" ? null : yield* email(rawEmail)
      if (address !== null && address !== user.email) {
        if (yield* users.isTaken("email", address, user.id)) return yield* emailExists
        patch["email"] = address
      }
      const rawPhone = given(request.phone)
      const number = rawPhone === "" ? null : yield* phone(rawPhone)
      if (number !== null && number !== user.phone) {
        if (yield* users.isTaken("phone", number, user.id)) return yield* phoneExists
        patch["phone"] = number
      }
      if (request.user_metadata != null || Object.keys(verified).length > 0) {
        patch["raw_user_meta_data"] = mergeMetadata(user.raw_user_meta_data ?? {}, { ...request.user_metadata, ...verified })
      }
      let appMetadata = request.app_metadata != null ? mergeMetadata(user.raw_app_meta_data ?? {}, request.app_metadata) : undefined
      yield* checkMetadata(
        (patch["raw_user_meta_data"] ?? user.raw_user_meta_data ?? {}) as Record<string, unknown>,
        appMetadata ?? user.raw_app_meta_data ?? {}
      )
      const banned = yield* ban(request.ban_duration, at)
      if (banned !== undefined) patch["banned_until"] = banned

      const password = given(request.password)
      if (password !== "" || given(request.password_hash) !== "") patch["encrypted_password"] = yield* passwordFor(request)
      // A new password ends every session (GoTrue's UpdatePassword); so does a ban that is in force (the rule).
      const endSessions = patch["encrypted_password"] !== undefined || (banned !== undefined && banned !== null && banned > at)

      const updated = yield* commit(
        Effect.gen(function*() {
          const current = yield* identities.forUser(user.id)
          const upsert = (provider: "email" | "phone", value: string) => {
            const identity = current.find((row) => row.provider === provider)
            if (identity !== undefined) return identities.updateData(identity.id, { ...identity.identity_data, [provider]: value }, at)
            // A new identity joins app_metadata.providers (GoTrue's UpdateAppMetaDataProviders).
            const base = appMetadata ?? user.raw_app_meta_data ?? {}
            const listed = Array.isArray(base["providers"]) ? base["providers"] : []
            appMetadata = {
              ...base,
              provider: base["provider"] ?? provider,
              providers: listed.includes(provider) ? listed : [...listed, provider]
            }
            return Effect.flatMap(random.uuid(), (id) => identities.insert({
              id,
              provider_id: user.id,
              user_id: user.id,
              identity_data: { sub: user.id, [provider]: value, email_verified: false, phone_verified: false },
              provider,
              now: at
            }))
          }
          if (typeof patch["email"] === "string") yield* upsert("email", patch["email"])
          if (typeof patch["phone"] === "string") yield* upsert("phone", patch["phone"])
          if (appMetadata !== undefined) patch["raw_app_meta_data"] = appMetadata
          const row = Object.keys(patch).length > 0 ? yield* users.update(user.id, patch as UserPatch, at) : user
          // A confirmation by the admin spends the pending one.
          yield* pending.forgetCleared(row)
          if (endSessions) yield* sessions.deleteForUser(user.id, "all")
          // A ban is a modification like any other in GoTrue's log; its end (or lifting) is in the traits.
          const banTrait = banned === undefined ? {} : { banned_until: banned === null ? null : banned.toISOString() }
          yield* audit.record("user_modified", { actor, traits: { ...subjectTraits(row), ...banTrait } })
          return row
        }),
        patch["email"] !== undefined ? emailExists : phoneExists
      )
      return yield* toJson(updated)
    })

    const remove = traced("AdminUsers.remove")(function*(
      rawId: string,
      soft: boolean,
      actor: AuditActor
    ): Effect.fn.Return<void, AuthError> {
      const at = yield* now
      const user = yield* load(rawId)
      yield* commit(
        Effect.gen(function*() {
          // Sessions go first; their refresh tokens and amr claims cascade, and tokens without a session go by user.
          yield* audit.record("user_deleted", { actor, traits: { ...subjectTraits(user), soft_delete: soft } })
          yield* sessions.deleteForUser(user.id, "all")
          yield* refreshTokens.removeForUser(user.id)
          if (!soft) {
            yield* identities.removeForUser(user.id)
            return yield* users.remove(user.id)
          }
          // GoTrue's SoftDeleteUser: the row stays for the record, unusable and unfindable by its old addresses, and
          // keeps no factor and no passkey.
          yield* factors.removeForUser(user.id)
          yield* passkeys.removeForUser(user.id)
          for (const identity of yield* identities.forUser(user.id)) yield* identities.updateData(identity.id, {}, at)
          const deleted = yield* users.update(user.id, {
            email: user.email === null || user.email === "" ? user.email : obfuscatedAddress(user.id, user.email, "email"),
            phone: user.phone === null || user.phone === "" ? user.phone : obfuscatedAddress(user.id, user.phone, "phone"),
            encrypted_password: "",
            confirmation_token: "",
            recovery_token: "",
            email_change: "",
            email_change_token_new: "",
            email_change_token_current: "",
            phone_change: "",
            phone_change_token: "",
            reauthentication_token: "",
            raw_user_meta_data: {},
            raw_app_meta_data: {},
            deleted_at: at
          }, at)
          yield* pending.forgetCleared(deleted)
        }),
        emailExists
      )
    })

    return { list, create, get, update, remove } as const
  }),
  dependencies: [
    Users.Default,
    UsersRepo.Default,
    IdentitiesRepo.Default,
    SessionsRepo.Default,
    RefreshTokensRepo.Default,
    AuditLog.Default,
    PendingTokens.Default,
    FactorsRepo.Default,
    PasskeyCredentialsRepo.Default,
    Transactions.Live
  ]
}) {}
