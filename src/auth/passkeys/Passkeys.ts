import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { CurrentUser } from "../contract/CurrentUser.js"
import type { Session } from "../contract/Session.js"
import { needsAal2 } from "../domain/Assurance.js"
import { AuthError } from "../domain/AuthError.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { type AuditActor, AuditLog } from "../users/AuditLog.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { authenticatorName } from "../webauthn/AuthenticatorNames.js"
import { PasskeyCredentialsRepo, type PasskeyChallengeType, type PasskeyRow } from "../webauthn/PasskeyCredentialsRepo.js"
import type { RelyingParty } from "../webauthn/RelyingParty.js"
import {
  assertionCredentialId,
  assertionUserHandle,
  checkAssertionShape,
  verifyAuthentication,
  verifyRegistration,
  type WebAuthnVerificationFailed
} from "../webauthn/WebAuthnVerifier.js"
import {
  CHALLENGE_BYTES,
  type CreationOptionsJson,
  passkeyAuthentication,
  passkeyRegistration,
  type RequestOptionsJson,
  sessionChallenge
} from "../webauthn/WebAuthnOptions.js"
import { pathUser } from "../users/PathUser.js"
import { traced } from "../../platform/Traced.js"

/** A passkey as GoTrue lists it: no name when it has none, no last use before the first sign-in. */
export interface PasskeyItem {
  readonly id: string
  readonly friendly_name?: string
  readonly created_at: string
  readonly last_used_at?: string
}

/** A ceremony's start, in GoTrue's key order. */
export interface PasskeyCeremony<Options> {
  readonly challenge_id: string
  readonly options: Options
  readonly expires_at: number
}

/** A ceremony's answer as the body carried it: `undefined` for a field it left out. */
export interface PasskeyAnswer {
  readonly challengeId: string | null | undefined
  readonly credential: unknown
  readonly hasCredential: boolean
}

type Caller = Pick<CurrentUser["Type"], "user" | "factors" | "session">

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** GoTrue's limit on a name, in bytes of UTF-8 (its message says characters). */
const MAX_NAME_BYTES = 120

/**
 * The transports a credential may record: the WebAuthn ones. A client could list anything there, and the column is
 * jsonb, where a NUL character would be a database error instead of a refusal.
 */
const TRANSPORTS: ReadonlySet<string> = new Set(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"])

const itemOf = (row: PasskeyRow): PasskeyItem => ({
  id: row.id,
  ...(row.friendly_name === "" ? {} : { friendly_name: row.friendly_name }),
  created_at: row.created_at.toISOString(),
  ...(row.last_used_at === null ? {} : { last_used_at: row.last_used_at.toISOString() })
})

// Built when a request fails, not before.
const passkeyNotFound = () => AuthError.of(404, "validation_failed", "Passkey not found")
const verificationFailed = () => AuthError.of(400, "webauthn_verification_failed", "Credential verification failed")
const tooMany = () => AuthError.of(422, "too_many_passkeys", "Maximum number of passkeys reached")

/** The floor's refusal as GoTrue words it: not a response at all, or one that does not verify. */
const refusal = (failed: WebAuthnVerificationFailed): AuthError =>
  failed.kind === "malformed"
    ? AuthError.of(400, "webauthn_verification_failed", "Invalid credential response")
    : verificationFailed()

/**
 * Passkeys (GoTrue's internal/api/passkey_*.go): registration for a signed-in user, discoverable sign-in for anyone,
 * and the user's and the admin's list, rename and delete. Each check comes in GoTrue's order, so a client sees the
 * same first refusal. The RP comes from WEBAUTHN_RP_*; challenges are single use (consumed by the statement that
 * reads them) and expire after WEBAUTHN_CHALLENGE_EXPIRY_DURATION.
 */
export class Passkeys extends Effect.Service<Passkeys>()("auth/Passkeys", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const random = yield* SecureRandom
    const transactions = yield* Transactions
    const repo = yield* PasskeyCredentialsRepo
    const users = yield* UsersRepo
    const audit = yield* AuditLog
    const tokens = yield* AccessTokens
    const rp: RelyingParty = { id: config.webauthn.rpId, name: config.webauthn.rpDisplayName, origins: config.webauthn.rpOrigins }
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const commit = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      transactions.run(effect).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))

    /** requireNotAnonymous, is_sso_user and requirePasskeyManagementAAL, in the order GoTrue's routes apply them. */
    const mayRegister = ({ factors, session, user }: Caller): Effect.Effect<void, AuthError> => {
      if (user.is_anonymous) return Effect.fail(AuthError.of(403, "no_authorization", "Anonymous user not allowed to perform these actions"))
      if (user.is_sso_user) return Effect.fail(AuthError.of(422, "validation_failed", "SSO users cannot register passkeys"))
      return requireAal(factors, session)
    }

    const requireAal = (factors: Caller["factors"], session: Caller["session"]): Effect.Effect<void, AuthError> =>
      needsAal2(factors, session?.aal)
        ? Effect.fail(AuthError.of(403, "insufficient_aal", "AAL2 session is required to manage passkeys when MFA is enabled"))
        : Effect.void

    /** Stores a new challenge for a ceremony, live for WEBAUTHN_CHALLENGE_EXPIRY_DURATION. */
    const begin = <Options>(
      type: PasskeyChallengeType,
      userId: string | null,
      ceremony: { readonly options: Options; readonly session: unknown },
      at: Date
    ) =>
      Effect.gen(function*() {
        const id = yield* random.uuid()
        const expiresAt = new Date(at.getTime() + Duration.toMillis(config.passkey.challengeExpiry))
        yield* repo.insertChallenge({ id, userId, type, sessionData: ceremony.session, now: at, expiresAt })
        const started: PasskeyCeremony<Options> = {
          challenge_id: id,
          options: ceremony.options,
          expires_at: Math.floor(expiresAt.getTime() / 1000)
        }
        return started
      })

    /** The body's checks, then the challenge taken out (gone whatever follows), then its expiry. The challenge text. */
    const consume = (answer: PasskeyAnswer, type: PasskeyChallengeType, userId: string | null, at: Date) =>
      Effect.gen(function*() {
        const challengeId = answer.challengeId ?? ""
        if (challengeId === "") return yield* AuthError.of(400, "validation_failed", "challenge_id is required")
        if (!answer.hasCredential) return yield* AuthError.of(400, "validation_failed", "credential is required")
        if (!UUID.test(challengeId)) return yield* AuthError.of(400, "validation_failed", "challenge_id must be a valid UUID")
        const row = yield* repo.consumeChallenge(challengeId, type, userId)
        if (Option.isNone(row)) return yield* AuthError.of(400, "webauthn_challenge_not_found", "Challenge not found or already used")
        if (at.getTime() > row.value.expires_at.getTime()) {
          return yield* AuthError.of(400, "webauthn_challenge_expired", "Challenge has expired")
        }
        // Session data that is not go-webauthn's cannot be answered; nothing verifies against it.
        const challenge = sessionChallenge(row.value.session_data)
        if (challenge === undefined) return yield* verificationFailed()
        return challenge
      })

    const registrationOptions = traced("Passkeys.registrationOptions")(function*(
      caller: Caller
    ): Effect.fn.Return<PasskeyCeremony<CreationOptionsJson>, AuthError> {
      yield* mayRegister(caller)
      const { user } = caller
      const at = yield* now
      const existing = yield* repo.forUser(user.id)
      if (existing.length >= config.passkey.maxPerUser) return yield* tooMany()
      const challenge = yield* random.bytes(CHALLENGE_BYTES)
      const ceremony = passkeyRegistration({
        rp,
        user: { id: user.id, email: user.email, phone: user.phone, userMetadata: user.raw_user_meta_data },
        challenge,
        exclude: existing.map((passkey) => passkey.credential_id)
      })
      return yield* begin("registration", user.id, ceremony, at)
    })

    const registrationVerify = traced("Passkeys.registrationVerify")(function*(
      caller: Caller,
      answer: PasskeyAnswer
    ): Effect.fn.Return<PasskeyItem, AuthError> {
      yield* mayRegister(caller)
      const { user } = caller
      const at = yield* now
      const challenge = yield* consume(answer, "registration", user.id, at)
      const registered = yield* verifyRegistration(rp, challenge, answer.credential).pipe(Effect.mapError(refusal))
      const id = yield* random.uuid()
      const row = yield* commit(Effect.gen(function*() {
        // Checked again where it is written: two registrations started under the limit must not both pass it.
        if ((yield* repo.countForUser(user.id)) >= config.passkey.maxPerUser) return yield* tooMany()
        const inserted = yield* repo.insert({
          id,
          userId: user.id,
          credentialId: registered.credentialId,
          publicKey: registered.publicKey,
          attestationType: registered.attestationFormat,
          aaguid: registered.aaguid,
          signCount: registered.signCount,
          transports: registered.transports.filter((transport) => TRANSPORTS.has(transport)),
          backupEligible: registered.flags.backupEligible,
          backedUp: registered.flags.backupState,
          friendlyName: authenticatorName(registered.aaguid),
          now: at
        })
        if (Option.isNone(inserted)) {
          return yield* AuthError.of(422, "webauthn_credential_exists", "This credential is already registered")
        }
        yield* audit.record("passkey_created", { actor: user, traits: { passkey_id: id } })
        return inserted.value
      }))
      const item = itemOf(row)
      // GoTrue's registration answer has no last use (a new passkey has none anyway).
      return { id: item.id, ...(item.friendly_name === undefined ? {} : { friendly_name: item.friendly_name }), created_at: item.created_at }
    })

    const authenticationOptions = traced("Passkeys.authenticationOptions")(function*(): Effect.fn.Return<
      PasskeyCeremony<RequestOptionsJson>
    > {
      const at = yield* now
      const challenge = yield* random.bytes(CHALLENGE_BYTES)
      return yield* begin("authentication", null, passkeyAuthentication({ rp, challenge }), at)
    })

    /** The user and passkey an assertion names, or GoTrue's one refusal for an unknown user, passkey or owner. */
    const signer = (credential: unknown) =>
      Effect.gen(function*() {
        const handle = assertionUserHandle(credential)
        if (handle === undefined || !UUID.test(handle)) return yield* verificationFailed()
        const user = yield* users.findById(handle.toLowerCase())
        if (Option.isNone(user)) return yield* verificationFailed()
        const credentialId = assertionCredentialId(credential)
        const passkey = credentialId === undefined ? Option.none() : yield* repo.findByCredentialId(credentialId)
        if (Option.isNone(passkey) || passkey.value.user_id !== user.value.id) return yield* verificationFailed()
        return { user: user.value, passkey: passkey.value }
      })

    /** GoTrue's refusals after a valid assertion, in its order. */
    const maySignIn = (user: UserRow, at: Date): Effect.Effect<void, AuthError> => {
      if ((user.email ?? "") !== "" && user.email_confirmed_at === null) return Effect.fail(AuthError.of(403, "email_not_confirmed", "Email not confirmed"))
      if ((user.phone ?? "") !== "" && user.phone_confirmed_at === null) return Effect.fail(AuthError.of(403, "phone_not_confirmed", "Phone not confirmed"))
      if (isBanned(user, at)) return Effect.fail(AuthError.of(403, "user_banned", "User is banned"))
      return Effect.void
    }

    const authenticationVerify = traced("Passkeys.authenticationVerify")(function*(
      answer: PasskeyAnswer
    ): Effect.fn.Return<Session, AuthError> {
      const at = yield* now
      const challenge = yield* consume(answer, "authentication", null, at)
      yield* checkAssertionShape(answer.credential).pipe(Effect.mapError(refusal))
      const { passkey, user } = yield* signer(answer.credential)
      const verified = yield* verifyAuthentication(rp, challenge, {
        id: passkey.credential_id,
        publicKey: passkey.public_key,
        counter: passkey.sign_count,
        transports: passkey.transports
      }, answer.credential).pipe(Effect.mapError(refusal))
      yield* maySignIn(user, at)
      return yield* commit(Effect.zipRight(
        repo.recordUse(passkey.id, verified.newCounter, at),
        tokens.issue(user, "passkey", at, { action: "login", traits: { passkey_id: passkey.id } })
      ))
    })

    const list = traced("Passkeys.list")(function*(userId: string): Effect.fn.Return<ReadonlyArray<PasskeyItem>> {
      return (yield* repo.forUser(userId)).map(itemOf)
    })

    const rename = traced("Passkeys.rename")(function*(
      user: UserRow,
      rawId: string,
      friendlyName: string | null | undefined
    ): Effect.fn.Return<PasskeyItem, AuthError> {
      if (!UUID.test(rawId)) return yield* passkeyNotFound()
      const name = friendlyName ?? ""
      if (name === "") return yield* AuthError.of(400, "validation_failed", "friendly_name is required")
      if (Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES) {
        return yield* AuthError.of(400, "validation_failed", "friendly_name must be 120 characters or less")
      }
      const at = yield* now
      const renamed = yield* commit(Effect.gen(function*() {
        const row = yield* repo.rename(user.id, rawId, name, at)
        if (Option.isNone(row)) return yield* passkeyNotFound()
        yield* audit.record("passkey_updated", { actor: user, traits: { passkey_id: row.value.id } })
        return row.value
      }))
      return itemOf(renamed)
    })

    const remove = traced("Passkeys.remove")(function*(caller: Caller, rawId: string): Effect.fn.Return<void, AuthError> {
      yield* requireAal(caller.factors, caller.session)
      if (!UUID.test(rawId)) return yield* passkeyNotFound()
      yield* commit(Effect.gen(function*() {
        if (!(yield* repo.remove(caller.user.id, rawId))) return yield* passkeyNotFound()
        yield* audit.record("passkey_deleted", { actor: caller.user, traits: { passkey_id: rawId.toLowerCase() } })
      }))
    })

    const loadUser = (rawUserId: string) => pathUser(users, rawUserId)

    const adminList = traced("Passkeys.adminList")(function*(rawUserId: string): Effect.fn.Return<ReadonlyArray<PasskeyItem>, AuthError> {
      const user = yield* loadUser(rawUserId)
      return yield* list(user.id)
    })

    const adminRemove = traced("Passkeys.adminRemove")(function*(
      rawUserId: string,
      rawId: string,
      actor: AuditActor
    ): Effect.fn.Return<void, AuthError> {
      const user = yield* loadUser(rawUserId)
      if (!UUID.test(rawId)) return yield* passkeyNotFound()
      yield* commit(Effect.gen(function*() {
        if (!(yield* repo.remove(user.id, rawId))) return yield* passkeyNotFound()
        yield* audit.record("passkey_deleted", { actor, traits: { user_id: user.id, passkey_id: rawId.toLowerCase() } })
      }))
    })

    return {
      registrationOptions,
      registrationVerify,
      authenticationOptions,
      authenticationVerify,
      list,
      rename,
      remove,
      adminList,
      adminRemove
    } as const
  }),
  dependencies: [PasskeyCredentialsRepo.Default, UsersRepo.Default, AuditLog.Default, Transactions.Live]
}) {}
