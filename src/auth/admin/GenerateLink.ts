import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { GeneratedLink, LINK_KINDS } from "./AdminLinksApi.js"
import { AuthError } from "../domain/AuthError.js"
import { emailActionLink } from "../domain/EmailActionLink.js"
import { emailProblemMessage, parseEmail } from "../domain/Email.js"
import { mergeMetadata } from "../domain/MergeMetadata.js"
import { metadataTooLarge } from "../domain/MetadataSize.js"
import type { TokenKind } from "../domain/LinkToken.js"
import { enforcePasswordPolicy } from "../domain/PasswordPolicy.js"
import { allowedRedirect, chooseRedirect } from "../domain/RedirectTo.js"
import type { UserRow } from "../domain/UserRow.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { type IssuedToken, PendingTokens } from "../users/PendingTokens.js"
import { userJson } from "../users/UserJson.js"
import { Users } from "../users/Users.js"
import { type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"

/** The links /admin/generate_link makes (GoTrue's `mail.go`). */
export type LinkKind = (typeof LINK_KINDS)[number]
const isLinkKind = (type: string): type is LinkKind => (LINK_KINDS as ReadonlyArray<string>).includes(type)

export interface GenerateLinkRequest {
  readonly type?: string | null | undefined
  readonly email?: string | null | undefined
  readonly newEmail?: string | null | undefined
  readonly password?: string | null | undefined
  readonly data?: Record<string, unknown> | null | undefined
  /** redirect_to in the body; it wins over the query's when it is allowed, as in GoTrue. */
  readonly redirectTo?: string | null | undefined
  readonly queryRedirectTo?: string | undefined
}

const emailExists = () => AuthError.of(422, "email_exists", "A user with this email address has already been registered")

const validEmail = (raw: string | null | undefined) =>
  Either.mapLeft(parseEmail(raw ?? ""), (problem) => AuthError.validation(emailProblemMessage[problem]))

/** A user to create for the link: a sign-up (with its password hash) or an invitee (none). */
interface Newcomer {
  readonly encryptedPassword: string | null
  readonly data: Record<string, unknown>
}

/**
 * POST /admin/generate_link (reference §2.17): the link and code of the mail a flow would send, for an admin
 * who delivers it another way. Nothing is mailed, so no frequency window or rate limit applies; the token goes
 * into exactly the column the mail flow would fill, so the link and code work in /verify as the mailed ones do.
 */
export class GenerateLink extends Effect.Service<GenerateLink>()("auth/GenerateLink", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const newUsers = yield* Users
    const identities = yield* IdentitiesRepo
    const hasher = yield* PasswordHasher
    const random = yield* SecureRandom
    const pending = yield* PendingTokens
    const allowList = compileAllowList(config.uriAllowList)

    // Nobody is told this password: the magic link of an unknown address signs it up, as /otp does.
    const unknownPassword = Effect.gen(function*() {
      const password = `${yield* random.uuid()}${yield* random.uuid()}`.replaceAll("-", "")
      return yield* hasher.hash(Redacted.make(password))
    })

    const create = (email: string, newcomer: Newcomer, at: Date) =>
      newUsers.create({
        aud: config.jwt.aud,
        role: config.jwt.defaultGroupName,
        email,
        phone: null,
        encryptedPassword: newcomer.encryptedPassword,
        userMetadata: newcomer.data,
        provider: "email",
        emailConfirmedAt: null,
        phoneConfirmedAt: null,
        isAnonymous: false,
        madeBy: "admin",
        now: at
      })

    /** Writes the token where the mail flow would; a new user (a newcomer) is created first. */
    const store = (email: string, user: Option.Option<UserRow> | Newcomer, patch: UserPatch, kind: TokenKind, token: IssuedToken, at: Date) =>
      transactions.run(Effect.gen(function*() {
        const id = Option.isOption(user) ? Option.getOrThrow(user).id : (yield* create(email, user, at)).id
        yield* pending.record(id, kind, token, at)
        return yield* users.update(id, patch, at)
      })).pipe(
        // Another request created the address between the lookup and this insert.
        Effect.catchTag("UniqueViolation", () => Effect.fail(emailExists())),
        Effect.catchTag("SqlError", Effect.die)
      )

    const generate = traced("GenerateLink.generate")(function*(request: GenerateLinkRequest): Effect.fn.Return<GeneratedLink, AuthError> {
      const at = new Date(yield* Clock.currentTimeMillis)
      const email = yield* validEmail(request.email)
      const type = request.type ?? ""
      if (!isLinkKind(type)) return yield* AuthError.validation(`Invalid email action link type requested: ${type}`)
      // Without secure change there is no current-address half to confirm (GoTrue answers the same 400).
      if (type === "email_change_current" && !config.mailer.secureEmailChangeEnabled) {
        return yield* AuthError.validation("Secure email change is disabled: email_change_current links cannot be generated")
      }
      const data = request.data ?? {}
      const tooLarge = metadataTooLarge(data, {})
      if (Option.isSome(tooLarge)) return yield* AuthError.validation(tooLarge.value)
      const redirectTo = allowedRedirect(request.redirectTo ?? undefined, config.siteUrl, allowList) ??
        chooseRedirect(request.queryRedirectTo, config.siteUrl, allowList)

      const existing = yield* users.findByEmail(config.jwt.aud, email)
      let kind: LinkKind = type
      let newcomer: Newcomer = { encryptedPassword: null, data }
      if (Option.isNone(existing)) {
        switch (kind) {
          case "magiclink":
            kind = "signup"
            newcomer = { encryptedPassword: yield* unknownPassword, data }
            break
          case "recovery":
          case "email_change_current":
          case "email_change_new":
            return yield* AuthError.of(404, "user_not_found", "User with this email not found")
          case "signup": {
            const password = request.password ?? ""
            if (password === "") return yield* AuthError.validation("Signup requires a valid password")
            yield* enforcePasswordPolicy(password, config.password)
            newcomer = { encryptedPassword: yield* hasher.hash(Redacted.make(password)), data }
            break
          }
        }
      } else if ((kind === "signup" || kind === "invite") && existing.value.email_confirmed_at !== null) {
        return yield* emailExists()
      }

      const otp = yield* random.digits(config.mailer.otpLength)
      let token = yield* pending.mint(email, otp, { pkce: false, mailed: true })
      let patch: UserPatch
      let tokenKind: TokenKind
      switch (kind) {
        case "magiclink":
        case "recovery":
          patch = { recovery_token: token.stored, recovery_sent_at: at }
          tokenKind = "recovery"
          break
        case "signup":
          patch = { confirmation_token: token.stored, confirmation_sent_at: at }
          tokenKind = "confirmation"
          // A pending sign-up keeps its password; the data given is merged in, as GoTrue does.
          if (Option.isSome(existing) && request.data !== undefined && request.data !== null) {
            const merged = mergeMetadata(existing.value.raw_user_meta_data ?? {}, data)
            const overLimit = metadataTooLarge(merged, existing.value.raw_app_meta_data ?? {})
            if (Option.isSome(overLimit)) return yield* AuthError.validation(overLimit.value)
            patch = { ...patch, raw_user_meta_data: merged }
          }
          break
        case "invite":
          patch = { confirmation_token: token.stored, confirmation_sent_at: at, invited_at: at }
          tokenKind = "confirmation"
          break
        case "email_change_current":
        case "email_change_new": {
          const user = Option.getOrThrow(existing)
          const newEmail = yield* validEmail(request.newEmail)
          if (yield* users.isTaken("email", newEmail, user.id)) return yield* emailExists()
          // Each half of a secure change is its own link, confirmed from its own address; the code of the new
          // address is hashed with that address.
          if (kind === "email_change_new") token = yield* pending.mint(newEmail, otp, { pkce: false, mailed: true })
          tokenKind = kind
          patch = {
            email_change: newEmail,
            email_change_sent_at: at,
            email_change_confirm_status: 0,
            [kind === "email_change_new" ? "email_change_token_new" : "email_change_token_current"]: token.stored
          }
        }
      }
      const user = yield* store(email, Option.isSome(existing) ? existing : newcomer, patch, tokenKind, token, at)

      const paths = config.mailer.urlPaths
      const [path, linkType] = kind === "signup"
        ? [paths.confirmation, "signup"]
        : kind === "invite"
        ? [paths.invite, "invite"]
        : kind === "magiclink" || kind === "recovery"
        ? [paths.recovery, kind]
        : [paths.emailChange, "email_change"]
      return new GeneratedLink({
        ...userJson(user, yield* identities.forUser(user.id)),
        action_link: emailActionLink(platform.api.externalUrl, path, token.link!, linkType, redirectTo),
        email_otp: otp,
        // GoTrue's name: what an app that builds its own links puts in verifyOtp({ token_hash }). Here it is the
        // link token, not the code's hash.
        hashed_token: token.link!,
        verification_type: kind,
        redirect_to: redirectTo
      })
    })

    return { generate } as const
  }),
  dependencies: [Users.Default, UsersRepo.Default, IdentitiesRepo.Default, PendingTokens.Default, Transactions.Live]
}) {}
