import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { LINK_TOKEN_BYTES, linkDigest, nextConfirmationClaim, type SignupClaim, type TokenKind } from "../domain/LinkToken.js"
import { clearedTokens, type OneTimeTokenType, relatesTo } from "../domain/OneTimeToken.js"
import { otpTokenHash } from "../domain/OtpToken.js"
import { pkceToken } from "../domain/Pkce.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
import type { UserRow } from "../domain/UserRow.js"
import { type OneTimeTokenRow, OneTimeTokensRepo } from "./OneTimeTokensRepo.js"
import { type PendingTokenRow, PendingTokensRepo } from "./PendingTokensRepo.js"
import { traced } from "../../platform/Traced.js"

/** A one-time token as it is issued: what the message carries, and what the users column stores. */
export interface IssuedToken {
  /** The code a person types. */
  readonly otp: string
  /**
   * The users column's value: the code's hash in GoTrue's form (so either server checks a typed code), with
   * GoTrue's `pkce_` prefix in a PKCE flow.
   */
  readonly stored: string
  /** The token a mailed link carries, random and `pkce_`-prefixed in a PKCE flow; null for a text. */
  readonly link: string | null
  /** The address the message goes to. */
  readonly recipient: string
}

/** What `record` replaced, so that `putBack` can restore it when the message never arrived. */
export interface ReplacedToken {
  readonly userId: string
  readonly type: OneTimeTokenType
  /** Undefined for a reauthentication nonce, which has no pending_tokens row. */
  readonly kind: TokenKind | undefined
  readonly pending: Option.Option<PendingTokenRow>
  readonly oneTime: Option.Option<OneTimeTokenRow>
}

/**
 * Issues the one-time tokens every flow sends (sign-up, invitation, recovery, magic link, email and phone change,
 * reauthentication, generated links) and keeps their bookkeeping beside the users columns: Gatehouse's
 * pending_tokens (the link's digest, a sign-up's claim) and GoTrue's one_time_tokens (see migration 0014). `record`
 * belongs in the transaction that stores `stored` in the users column, and `forgetCleared` in the one that empties
 * a column, so the three never disagree.
 */
export class PendingTokens extends Effect.Service<PendingTokens>()("auth/PendingTokens", {
  effect: Effect.gen(function*() {
    const random = yield* SecureRandom
    const repo = yield* PendingTokensRepo
    const oneTimes = yield* OneTimeTokensRepo

    /** A token for `otp` sent to `recipient`; `mailed` gives it a link. */
    const mint = (recipient: string, otp: string, options: { readonly pkce: boolean; readonly mailed: boolean }): Effect.Effect<IssuedToken> =>
      Effect.gen(function*() {
        const flow = (value: string) => options.pkce ? pkceToken(value) : value
        const link = options.mailed ? flow((yield* random.bytes(LINK_TOKEN_BYTES)).toString("hex")) : null
        return { otp, stored: flow(otpTokenHash(recipient, otp)), link, recipient }
      })

    /** GoTrue's row for the token, with a new id as GoTrue's CreateOneTimeToken gives it; answers the row it replaced. */
    const putOneTime = (userId: string, type: OneTimeTokenType, token: IssuedToken, at: Date) =>
      Effect.gen(function*() {
        const previous = yield* oneTimes.find(userId, type)
        yield* oneTimes.put({
          id: yield* random.uuid(),
          user_id: userId,
          token_type: type,
          token_hash: token.stored,
          relates_to: relatesTo(token.recipient),
          created_at: at
        })
        return previous
      })

    /**
     * Records `token` as the user's pending token of `kind`, and answers what it replaces (for `putBack` when the
     * message never arrived). A confirmation carries its claim: a repeated sign-up's own, or the contest of the
     * confirmation before it (see nextConfirmationClaim).
     */
    const record = traced("PendingTokens.record")(function*(
      userId: string,
      kind: TokenKind,
      token: IssuedToken,
      at: Date,
      repeated?: SignupClaim
    ): Effect.fn.Return<ReplacedToken> {
      const previous = yield* repo.find(userId, kind)
      const claim = kind === "confirmation"
        ? nextConfirmationClaim(Option.getOrUndefined(previous), repeated)
        : { reclaim: false, password: null, data: null }
      yield* repo.put({
        user_id: userId,
        token_kind: kind,
        link_digest: token.link === null ? null : linkDigest(token.link),
        code_hash: token.stored,
        created_at: at,
        reclaim: claim.reclaim,
        signup_password: claim.password,
        signup_data: claim.data
      })
      const type = CODE_COLUMN_OF[kind]
      return { userId, type, kind, pending: previous, oneTime: yield* putOneTime(userId, type, token, at) }
    })

    /** Records a reauthentication nonce: only GoTrue's row, as the nonce has no link and no attempt counter. */
    const recordReauthentication = traced("PendingTokens.recordReauthentication")(function*(
      userId: string,
      token: IssuedToken,
      at: Date
    ): Effect.fn.Return<ReplacedToken> {
      const type = "reauthentication_token"
      return { userId, type, kind: undefined, pending: Option.none(), oneTime: yield* putOneTime(userId, type, token, at) }
    })

    /** Puts back what `record` replaced, so the earlier message's link works again and the new one's is gone. */
    const putBack = (replaced: ReplacedToken): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { kind, userId } = replaced
        if (kind !== undefined) {
          yield* Option.match(replaced.pending, { onNone: () => repo.remove(userId, [kind]), onSome: repo.put })
        }
        yield* Option.match(replaced.oneTime, { onNone: () => oneTimes.remove(userId, [replaced.type]), onSome: oneTimes.put })
      })

    /** Forgets every token whose users column `user` (as just written) leaves empty (see clearedTokens). */
    const forgetCleared = traced("PendingTokens.forgetCleared")(function*(user: UserRow): Effect.fn.Return<void> {
      const { kinds, types } = clearedTokens(user)
      yield* repo.remove(user.id, kinds)
      yield* oneTimes.remove(user.id, types)
    })

    /** Forgets every pending token of the user (an account taken over). */
    const forgetAll = traced("PendingTokens.forgetAll")(function*(userId: string): Effect.fn.Return<void> {
      yield* repo.removeForUser(userId)
      yield* oneTimes.removeForUser(userId)
    })

    return { mint, record, recordReauthentication, putBack, forgetCleared, forgetAll } as const
  }),
  dependencies: [PendingTokensRepo.Default, OneTimeTokensRepo.Default]
}) {}
