import * as Data from "effect/Data"
import * as Option from "effect/Option"

/** How the primary treats a worker that exits while it should be serving. */
export interface RestartPolicy {
  /** The wait before replacing a worker whose previous run was healthy. */
  readonly firstDelayMillis: number
  /** The wait never grows past this. */
  readonly maxDelayMillis: number
  /** A worker that served this long was healthy: its exit starts the back-off over. */
  readonly stableAfterMillis: number
  /** Replacements in a row that exit before serving, after which the primary gives up. */
  readonly maxStartFailures: number
}

export const RESTART_POLICY: RestartPolicy = {
  firstDelayMillis: 500,
  maxDelayMillis: 30_000,
  stableAfterMillis: 60_000,
  maxStartFailures: 5
}

/** One worker slot's recent exits. */
export interface RestartHistory {
  /** Exits since the slot last had a healthy run, this one included once counted. */
  readonly exits: number
  /** Exits in a row before serving. */
  readonly startFailures: number
}

export const NO_EXITS: RestartHistory = { exits: 0, startFailures: 0 }

export type RestartDecision = Data.TaggedEnum<{
  /** Fork a replacement after `delayMillis`. */
  Restart: { readonly delayMillis: number; readonly history: RestartHistory }
  /** Replacements keep failing at start-up (port taken, database gone): retrying only hides it. */
  GiveUp: {}
}>
export const RestartDecision = Data.taggedEnum<RestartDecision>()

/**
 * What to do when a worker exits unasked, given how long it served (None: it exited before it was ready). A crash
 * after a healthy run is replaced after the first delay; exits close together double the wait up to the cap, so a worker that
 * dies on every request does not spin a core; start-up failures in a row end in GiveUp. A worker that served at
 * all resets the start-up count: it can start, so it is worth restarting.
 */
export const decideRestart = (
  history: RestartHistory,
  servedForMillis: Option.Option<number>,
  policy: RestartPolicy
): RestartDecision => {
  const startFailures = Option.isNone(servedForMillis) ? history.startFailures + 1 : 0
  if (startFailures >= policy.maxStartFailures) return RestartDecision.GiveUp()
  const healthy = Option.exists(servedForMillis, (served) => served >= policy.stableAfterMillis)
  const exits = healthy ? 1 : history.exits + 1
  const delayMillis = Math.min(policy.maxDelayMillis, policy.firstDelayMillis * 2 ** Math.min(exits - 1, 30))
  return RestartDecision.Restart({ delayMillis, history: { exits, startFailures } })
}
