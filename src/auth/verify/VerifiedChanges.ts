import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { AuthError } from "../domain/AuthError.js"
import { isLiveLink, type TokenKind } from "../domain/LinkToken.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
import type { UserRow } from "../domain/UserRow.js"
import type { VerifyRequest } from "../domain/Verification.js"
import { AccountReclaim } from "../users/AccountReclaim.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { type PendingTokenRow, PendingTokensRepo } from "../users/PendingTokensRepo.js"
import { type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { isFirstOfTwo, type Slot } from "./TokenSlot.js"

/**
 * What a verified token changes on its user (reference §2.9, §2.12): the address confirmed or changed, the identity's
 * claims, a contested sign-up's account reclaimed. Run inside Verify's transaction, on the locked user.
 */
export class VerifiedChanges extends Effect.Service<VerifiedChanges>()("auth/VerifiedChanges", {
  effect: Effect.gen(function*() {
    const random = yield* SecureRandom
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const pending = yield* PendingTokensRepo
    const reclaim = yield* AccountReclaim

    /** Sets claims on the user's identity for `provider`, creating it when `create` and there is none. */
    const setIdentityClaims = (user: UserRow, provider: "email" | "phone", claims: Record<string, unknown>, at: Date, create: boolean) =>
      Effect.gen(function*() {
        const existing = (yield* identities.forUser(user.id)).find((identity) => identity.provider === provider)
        if (existing !== undefined) return yield* identities.updateData(existing.id, { ...existing.identity_data, ...claims }, at)
        if (!create) return
        yield* identities.insert({
          id: yield* random.uuid(),
          provider_id: user.id,
          user_id: user.id,
          identity_data: { sub: user.id, email_verified: false, phone_verified: false, ...claims },
          provider,
          now: at
        })
      })

    const withProvider = (user: UserRow, provider: "email" | "phone"): Record<string, unknown> => {
      const app = user.raw_app_meta_data ?? {}
      const providers = Array.isArray(app["providers"]) ? (app["providers"] as ReadonlyArray<unknown>) : []
      return providers.includes(provider)
        ? app
        : { ...app, provider: app["provider"] ?? provider, providers: [...providers, provider] }
    }

    const update = (user: UserRow, patch: UserPatch, at: Date, taken: AuthError) =>
      users.update(user.id, patch, at).pipe(Effect.catchTag("UniqueViolation", () => Effect.fail(taken)))

    /**
     * A confirmation of an address that was signed up more than once while unconfirmed: it activates only what its
     * own sign-up brought (that password, or none for a confirmation no sign-up sent, and that sign-up's data), and
     * every other password, identity, session and pending token of the account goes (AccountReclaim).
     */
    const reclaimed = (user: UserRow, channel: "email" | "phone", claim: PendingTokenRow, at: Date) =>
      Effect.gen(function*() {
        const address = channel === "email" ? { email: user.email! } : { phone: user.phone! }
        const verified = { email_verified: channel === "email", phone_verified: channel === "phone" }
        const own = (yield* identities.forUser(user.id)).find((identity) => identity.provider === channel)
        const identityData = { sub: user.id, ...address, ...verified }
        const keep = own?.id ?? (yield* random.uuid())
        if (own === undefined) {
          yield* identities.insert({ id: keep, provider_id: user.id, user_id: user.id, identity_data: identityData, provider: channel, now: at })
        } else {
          yield* identities.updateData(own.id, identityData, at)
        }
        const app = user.raw_app_meta_data ?? {}
        return yield* reclaim.reclaim(user, keep, {
          encrypted_password: claim.signup_password ?? "",
          raw_user_meta_data: { ...(claim.signup_data ?? {}), ...identityData },
          raw_app_meta_data: { ...app, provider: channel, providers: [channel] },
          is_anonymous: false,
          ...(channel === "email"
            ? { email_confirmed_at: at, phone: null, phone_confirmed_at: null }
            : { phone_confirmed_at: at, email: null, email_confirmed_at: null })
        }, at)
      })

    /** The live confirmation's claim, when confirming it must reclaim the account (see reclaimed). */
    const contestedClaim = (user: UserRow, target: Slot) =>
      Effect.map(
        pending.find(user.id, "confirmation"),
        Option.filter((row) =>
          row.reclaim && isLiveLink(target.stored, row.code_hash) && user.email_confirmed_at === null && user.phone_confirmed_at === null
        )
      )

    /** What a matched token does (reference §2.9, §2.12); answers the user it leaves. */
    const apply = (user: UserRow, request: VerifyRequest, slot: Slot, at: Date): Effect.Effect<UserRow, AuthError> =>
      Effect.gen(function*() {
        const meta = user.raw_user_meta_data ?? {}
        const noConflict = AuthError.unexpected()
        if (slot.kind === "recovery") {
          // A recovery or magic link proves the address, so it confirms an unconfirmed one (as GoTrue's does).
          if (user.email_confirmed_at !== null) return yield* update(user, { recovery_token: "" }, at, noConflict)
          yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
          return yield* update(user, {
            recovery_token: "",
            email_confirmed_at: at,
            confirmation_token: "",
            raw_user_meta_data: { ...meta, email_verified: true }
          }, at, noConflict)
        }
        if (slot.kind === "confirmation") {
          const claim = yield* contestedClaim(user, slot)
          if (Option.isSome(claim)) return yield* reclaimed(user, request.type === "sms" ? "phone" : "email", claim.value, at)
        }
        switch (request.type) {
          case "sms": {
            yield* setIdentityClaims(user, "phone", { phone_verified: true }, at, false)
            return yield* update(user, {
              phone_confirmed_at: user.phone_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, phone_verified: true }
            }, at, noConflict)
          }
          case "email_change": {
            if (isFirstOfTwo(user, request, config.mailer.secureEmailChangeEnabled)) {
              return yield* update(user, { [slot.column]: "", email_change_confirm_status: 1 }, at, noConflict)
            }
            const email = user.email_change ?? ""
            yield* setIdentityClaims(user, "email", { email, email_verified: true }, at, true)
            return yield* update(user, {
              email,
              email_confirmed_at: user.email_confirmed_at ?? at,
              email_change: "",
              email_change_token_new: "",
              email_change_token_current: "",
              email_change_confirm_status: 0,
              is_anonymous: false,
              raw_user_meta_data: { ...meta, email, email_verified: true },
              raw_app_meta_data: withProvider(user, "email")
            }, at, AuthError.of(422, "email_exists", "A user with this email address has already been registered"))
          }
          case "phone_change": {
            const phone = user.phone_change ?? ""
            yield* setIdentityClaims(user, "phone", { phone, phone_verified: true }, at, true)
            return yield* update(user, {
              phone,
              phone_confirmed_at: at,
              phone_change: "",
              phone_change_token: "",
              is_anonymous: false,
              raw_user_meta_data: { ...meta, phone, phone_verified: true },
              raw_app_meta_data: withProvider(user, "phone")
            }, at, AuthError.of(422, "phone_exists", "A user with this phone number has already been registered"))
          }
          default: {
            yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
            return yield* update(user, {
              email_confirmed_at: user.email_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, email_verified: true }
            }, at, noConflict)
          }
        }
      })

    /**
     * Empties what `apply` left of the tokens a verification spent (spentByVerification): the other of the two
     * emailed codes an `email` code may name.
     */
    const clearSpent = (user: UserRow, spent: ReadonlyArray<TokenKind>, at: Date): Effect.Effect<UserRow> => {
      const left = spent.map((kind) => CODE_COLUMN_OF[kind]).filter((column) => (user[column] ?? "") !== "")
      return left.length === 0
        ? Effect.succeed(user)
        : users.update(user.id, Object.fromEntries(left.map((column) => [column, ""])) as UserPatch, at).pipe(Effect.orDie)
    }

    return { apply, clearSpent } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default, PendingTokensRepo.Default, AccountReclaim.Default]
}) {}
