import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import {
  appMetadataAfterSignIn,
  decideLink,
  type ExternalProfile,
  externalIdentityData,
  type LinkCandidate,
  profileEmail,
  settle
} from "../domain/ExternalLink.js"
import { mergeMetadata } from "../domain/MergeMetadata.js"
import { type IdentityRow, isBanned, type UserRow } from "../domain/UserRow.js"
import { AccountReclaim } from "./AccountReclaim.js"
import { AuditLog } from "./AuditLog.js"
import { IdentitiesRepo } from "./IdentitiesRepo.js"
import { UniqueViolation, UsersRepo } from "./UsersRepo.js"
import { traced } from "../../platform/Traced.js"

export type { ExternalProfile } from "../domain/ExternalLink.js"

/** Whose sign-in it was: an identity seen before, one newly linked to a user with its email, or a new user. */
export type ExternalOutcome = "existing" | "linked" | "created"

export interface ExternalSignIn {
  /** The user as it is after the sign-in (metadata refreshed, confirmed if the provider just verified it). */
  readonly user: UserRow
  readonly identity: IdentityRow
  readonly outcome: ExternalOutcome
}

// isTaken's "except this user" when there is no user to except.
const NO_USER = "00000000-0000-0000-0000-000000000000"

const isConfirmed = (user: UserRow): boolean => user.email_confirmed_at !== null || user.phone_confirmed_at !== null

const candidate = (user: UserRow, now: Date): LinkCandidate => ({
  userId: user.id,
  confirmed: isConfirmed(user),
  banned: isBanned(user, now)
})

type Settled =
  | { readonly _tag: "SignedIn"; readonly signIn: ExternalSignIn }
  | { readonly _tag: "NeedsVerification"; readonly user: UserRow }

/**
 * The sign-in was refused because nobody has proven the account's email yet; the user and identity are kept, and
 * the caller mails the user a confirmation (GoTrue does the same), after which the next sign-in succeeds. It reads
 * like the AuthError it becomes: 422 provider_email_needs_verification.
 */
export class EmailNeedsVerification extends Data.TaggedError("EmailNeedsVerification")<{
  readonly user: UserRow
  readonly provider: string
}> {
  get status(): number {
    return 422
  }
  get code(): string {
    return "provider_email_needs_verification"
  }
  override get message(): string {
    return `Unverified email with ${this.provider}. Verify the email with ${this.provider} in order to sign in`
  }
  toAuthError(): AuthError {
    return AuthError.of(this.status, this.code, this.message)
  }
}

/**
 * The sign-in floor every external provider shares (the OAuth callback, the id_token grant): finds or makes the
 * user and identity for a provider's verified profile, by the rule in domain/ExternalLink, in one transaction.
 * It writes the audit entry GoTrue writes (user_signedup for a user made or confirmed now, login otherwise); the
 * caller starts the session.
 */
export class ExternalAccounts extends Effect.Service<ExternalAccounts>()("auth/ExternalAccounts", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const transactions = yield* Transactions
    const audit = yield* AuditLog
    const reclaim = yield* AccountReclaim
    const random = yield* SecureRandom

    const mustFind = (id: string) =>
      Effect.flatMap(users.lockById(id), Option.match({
        onNone: () => Effect.dieMessage(`ExternalAccounts: no user ${id}`),
        onSome: Effect.succeed
      }))

    const mustFindIdentity = (provider: string, providerId: string) =>
      Effect.flatMap(identities.findByProvider(provider, providerId), Option.match({
        onNone: () => Effect.dieMessage(`ExternalAccounts: no ${provider} identity ${providerId}`),
        onSome: Effect.succeed
      }))

    const appMetadataAfter = (user: UserRow, provider: string) =>
      Effect.map(identities.forUser(user.id), (rows) => appMetadataAfterSignIn(user.raw_app_meta_data, provider, rows.map((row) => row.provider)))

    const inTransaction = (provider: string, profile: ExternalProfile, at: Date) =>
      Effect.gen(function*() {
        const email = profileEmail(profile)
        const verified = email !== undefined && profile.emailVerified
        const data = externalIdentityData(profile)
        const known = yield* identities.findByProvider(provider, profile.providerId)
        const identityOwner = Option.isSome(known) ? yield* mustFind(known.value.user_id) : undefined
        const emailOwner = identityOwner === undefined && email !== undefined
          ? Option.getOrUndefined(yield* users.findByEmail(config.jwt.aud, email))
          : undefined
        const emailTaken = emailOwner !== undefined || (email !== undefined && (yield* users.isTaken("email", email, NO_USER)))
        const decision = decideLink({
          identityOwner: identityOwner === undefined ? undefined : candidate(identityOwner, at),
          emailOwner: emailOwner === undefined ? undefined : candidate(emailOwner, at),
          emailTaken,
          email,
          emailVerified: verified,
          signupDisabled: config.disableSignup
        })

        let user: UserRow
        let outcome: ExternalOutcome
        switch (decision._tag) {
          case "Refuse":
            return yield* decision.reason === "signup_disabled"
              ? AuthError.of(422, "signup_disabled", "Signups not allowed for this instance")
              : AuthError.of(403, "user_banned", "User is banned")
          case "Existing": {
            yield* identities.signedIn(Option.getOrThrow(known).id, data, at)
            user = identityOwner!
            outcome = "existing"
            break
          }
          case "Link": {
            user = emailOwner!
            const identityId = yield* random.uuid()
            yield* identities.insert({ id: identityId, provider_id: profile.providerId, user_id: user.id, identity_data: data, provider, now: at })
            outcome = "linked"
            break
          }
          case "Create": {
            const id = yield* random.uuid()
            user = yield* users.insert({
              id,
              aud: config.jwt.aud,
              role: config.jwt.defaultGroupName,
              email: decision.email,
              phone: null,
              encrypted_password: "",
              email_confirmed_at: decision.confirmed ? at : null,
              phone_confirmed_at: null,
              raw_app_meta_data: { provider, providers: [provider] },
              raw_user_meta_data: data,
              is_anonymous: false,
              now: at
            }).pipe(Effect.orDie)
            const identityId = yield* random.uuid()
            yield* identities.insert({ id: identityId, provider_id: profile.providerId, user_id: id, identity_data: data, provider, now: at })
            outcome = "created"
            break
          }
        }
        const identity = yield* mustFindIdentity(provider, profile.providerId)

        if (!isConfirmed(user) && outcome !== "created") {
          // Nobody proved the account's address, so nothing else it holds is trusted: only this identity stays, and
          // no session or pending token (GoTrue's RemoveUnconfirmedIdentities, made complete).
          user = yield* reclaim.reclaim(user, identity.id, {
            encrypted_password: "",
            phone: null,
            raw_user_meta_data: data,
            raw_app_meta_data: { ...(user.raw_app_meta_data ?? {}), provider, providers: [provider] }
          }, at)
        } else if (outcome !== "created") {
          user = yield* users.update(user.id, {
            raw_user_meta_data: mergeMetadata(user.raw_user_meta_data ?? {}, data),
            raw_app_meta_data: yield* appMetadataAfter(user, provider)
          }, at).pipe(Effect.orDie)
        }

        const next = settle(isConfirmed(user), verified)
        if (next === "needs_verification") return { _tag: "NeedsVerification", user } satisfies Settled as Settled
        if (next === "confirm") {
          user = yield* users.update(user.id, {
            email_confirmed_at: at,
            raw_user_meta_data: { ...(user.raw_user_meta_data ?? {}), email_verified: true }
          }, at).pipe(Effect.orDie)
        }
        const signedUp = outcome === "created" || next === "confirm"
        yield* audit.record(signedUp ? "user_signedup" : "login", { actor: user, traits: { provider } })
        return { _tag: "SignedIn", signIn: { user, identity, outcome } } satisfies Settled as Settled
      })

    /**
     * Signs a provider's profile in. Fails with 422 signup_disabled, 403 user_banned, or 422
     * provider_email_needs_verification when the account's email is unproven; that last one still commits the
     * user and identity, as GoTrue's does, so a later verified sign-in finds them.
     */
    const signIn = traced("ExternalAccounts.signIn")(function*(
      provider: string,
      profile: ExternalProfile
    ): Effect.fn.Return<ExternalSignIn, AuthError | EmailNeedsVerification> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const attempt = transactions.run(inTransaction(provider, profile, at)).pipe(Effect.catchTag("SqlError", Effect.die))
      // Two first sign-ins of one identity (or one address) race to insert it: the loser's transaction rolls back
      // on the unique key, and running it once more finds what the winner made.
      const lostRace = (defect: unknown) => defect instanceof UniqueViolation || isUniqueViolation(defect)
      const settled = yield* attempt.pipe(
        Effect.catchSomeDefect((defect) => (lostRace(defect) ? Option.some(attempt) : Option.none()))
      )
      if (settled._tag === "NeedsVerification") return yield* new EmailNeedsVerification({ user: settled.user, provider })
      return settled.signIn
    })

    /**
     * Signs in an identity that carries no email (Web3: the wallet is the account), inside the caller's transaction:
     * the identity's user when it is known (metadata refreshed; never reclaimed nor held for verification, since
     * there is no address to prove), else a new user without email, phone or password. Fails with 422
     * signup_disabled or 403 user_banned. No audit entry: the caller writes the one its sign-in makes.
     */
    const signInWithoutEmail = traced("ExternalAccounts.signInWithoutEmail")(function*(
      provider: string,
      providerId: string,
      identityData: Record<string, unknown>,
      at: Date
    ): Effect.fn.Return<UserRow, AuthError> {
      const known = yield* identities.findByProvider(provider, providerId)
      if (Option.isNone(known)) {
        if (config.disableSignup) return yield* AuthError.of(422, "signup_disabled", "Signups not allowed for this instance")
        const id = yield* random.uuid()
        const user = yield* users.insert({
          id,
          aud: config.jwt.aud,
          role: config.jwt.defaultGroupName,
          email: null,
          phone: null,
          encrypted_password: "",
          email_confirmed_at: null,
          phone_confirmed_at: null,
          raw_app_meta_data: { provider, providers: [provider] },
          raw_user_meta_data: identityData,
          is_anonymous: false,
          now: at
        }).pipe(Effect.orDie)
        yield* identities.insert({ id: yield* random.uuid(), provider_id: providerId, user_id: id, identity_data: identityData, provider, now: at })
        return user
      }
      const owner = yield* mustFind(known.value.user_id)
      if (isBanned(owner, at)) return yield* AuthError.of(403, "user_banned", "User is banned")
      yield* identities.signedIn(known.value.id, identityData, at)
      return yield* users.update(owner.id, {
        raw_user_meta_data: mergeMetadata(owner.raw_user_meta_data ?? {}, identityData),
        raw_app_meta_data: yield* appMetadataAfter(owner, provider)
      }, at).pipe(Effect.orDie)
    })

    return { signIn, signInWithoutEmail } as const
  }),
  dependencies: [UsersRepo.Default, IdentitiesRepo.Default, AccountReclaim.Default, AuditLog.Default, Transactions.Live]
}) {}
