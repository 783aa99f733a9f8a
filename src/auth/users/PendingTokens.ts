import { Effect, Option } from "effect"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { LINK_TOKEN_BYTES, linkDigest, nextConfirmationClaim, type SignupClaim, type TokenKind } from "../domain/LinkToken.js"
import { otpTokenHash } from "../domain/OtpToken.js"
import { pkceToken } from "../domain/Pkce.js"
import { type PendingTokenRow, PendingTokensRepo } from "./PendingTokensRepo.js"

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
}

/**
 * Issues the one-time tokens every flow sends (sign-up, invitation, recovery, magic link, email change, generated
 * links) and records Gatehouse's side of them in pending_tokens. `record` belongs in the transaction that stores
 * `stored` in the users column, so the two never disagree.
 */
export class PendingTokens extends Effect.Service<PendingTokens>()("auth/PendingTokens", {
  effect: Effect.gen(function*() {
    const random = yield* SecureRandom
    const repo = yield* PendingTokensRepo

    /** A token for `otp` sent to `recipient`; `mailed` gives it a link. */
    const mint = (recipient: string, otp: string, options: { readonly pkce: boolean; readonly mailed: boolean }): Effect.Effect<IssuedToken> =>
      Effect.gen(function*() {
        const flow = (value: string) => options.pkce ? pkceToken(value) : value
        const link = options.mailed ? flow((yield* random.bytes(LINK_TOKEN_BYTES)).toString("hex")) : null
        return { otp, stored: flow(otpTokenHash(recipient, otp)), link }
      })

    /**
     * Records `token` as the user's pending token of `kind`, and answers the row it replaces (for `putBack` when
     * the message never arrived). A confirmation carries its claim: a repeated sign-up's own, or the contest of the
     * confirmation before it (see nextConfirmationClaim).
     */
    const record = Effect.fn("PendingTokens.record")(function*(
      userId: string,
      kind: TokenKind,
      token: IssuedToken,
      at: Date,
      repeated?: SignupClaim
    ): Effect.fn.Return<Option.Option<PendingTokenRow>> {
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
      return previous
    })

    /** Puts back the row `record` replaced, so the earlier message's link works again. */
    const putBack = (previous: Option.Option<PendingTokenRow>): Effect.Effect<void> =>
      Option.match(previous, { onNone: () => Effect.void, onSome: repo.put })

    return { mint, record, putBack } as const
  }),
  dependencies: [PendingTokensRepo.Default]
}) {}
