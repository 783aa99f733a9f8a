import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { parseGoDurationNanos } from "../../domain/GoDuration.js"

/**
 * An admin's `ban_duration` (reference §2.16, §8): a Go duration such as "24h" or "876000h", or "none" to lift the
 * ban. Zero lifts it too, and a negative duration bans until a moment already past, which is no ban (GoTrue's
 * `user.Ban`: banned_until = now + d, or NULL for 0).
 */
export type BanDuration =
  | { readonly _tag: "Lift" }
  | { readonly _tag: "For"; readonly nanos: bigint }

/** GoTrue's 400 text, with Go's own wording of the parse failure in it. */
export const invalidBanDurationMessage = (input: string): string =>
  `invalid format for ban duration: time: invalid duration ${JSON.stringify(input)}`

export const parseBanDuration = (input: string): Either.Either<BanDuration, string> => {
  if (input === "none") return Either.right({ _tag: "Lift" })
  return Option.match(parseGoDurationNanos(input), {
    onNone: () => Either.left(invalidBanDurationMessage(input)),
    onSome: (nanos): Either.Either<BanDuration, string> =>
      Either.right(nanos === 0n ? { _tag: "Lift" } : { _tag: "For", nanos })
  })
}

/** The banned_until column a ban sets: NULL when lifted, else now plus the duration (to the millisecond). */
export const bannedUntil = (ban: BanDuration, now: Date): Date | null =>
  ban._tag === "Lift" ? null : new Date(now.getTime() + Number(ban.nanos / 1_000_000n))
