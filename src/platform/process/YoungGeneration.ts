import { setFlagsFromString } from "node:v8"

/*
 * V8's young generation (the new space, two semi-spaces) holds a process's short-lived objects. Node lets it grow to
 * 2 × 16 MB, and it does during start-up, when loading the modules leaves most objects alive: a process then holds
 * about 30 MB of new space, resident, whatever it does afterwards, idle or not.
 * - Every process starts with it held at its initial size (holdYoungGeneration, before any module of the program is
 *   loaded). The node options are the operator's, so this sets V8's growth factor at run time: the factor is read each
 *   time V8 considers growing the new space, and 1 means "no bigger than now", which V8 handles as a normal decision
 *   not to grow.
 * - The primary, which serves nothing, keeps it held. A process that serves (a worker, or the single process) gets
 *   the default back once it is serving (releaseYoungGeneration): under load its young generation grows as V8 sees
 *   fit, so request CPU is as before, and an idle server no longer holds its start-up's new space (a worker idles at
 *   about 88 MB instead of 118). The start-up child and the commands get it back before they start their work.
 * - Under load a worker's young generation grows to V8's cap, 2 × 16 MB of semi-spaces, both resident. Workers get a cap
 *   of 2 × 8 MB (WORKER_SEMI_SPACE_MB) and a smaller growth of their old generation (WORKER_HEAP_GROWING_PERCENT), both
 *   through workerExecArgv below, unless the operator chose either.
 */

/**
 * A worker's semi-space cap, in MB (V8's --max-semi-space-size; Node's default is 16). Measured on 2 cores under GET
 * /user and refresh chains (README "Memory"): 8 takes 14–17 MB off each loaded worker (126–132 → 111–117 MB RSS), and
 * is what keeps the whole server inside a 250 MB container, for ~40 % more scavenges and ~11 % more time in GC. Request
 * CPU over five pairs of bench runs: GET /user +1 %, the refresh grant +7 %, both within this machine's run-to-run
 * noise. 4 took ~8 MB more off each worker and was measured at 10–25 % more CPU.
 */
export const WORKER_SEMI_SPACE_MB = 8

/**
 * How far a worker's old generation may grow past what the last full GC left alive, in percent. Under load most of
 * a worker's growth is there: objects of requests in flight survive two scavenges, are promoted, and die; V8's own
 * factor (up to 4×) lets them pile up to 70 MB over a live heap of 40 MB before it collects (workers at 160–230 MB
 * under GET /user). At 20 % they are collected every ~8 MB (V8's minimum step): workers stayed under 131 MB.
 */
export const WORKER_HEAP_GROWING_PERCENT = 20

const DEFAULT_GROWTH_FACTOR = 2

const GROWTH_CHOSEN = /^--heap[-_]growing[-_]percent\b/
const SEMI_SPACE_CHOSEN = /^--max[-_]semi[-_]space[-_]size\b/

/**
 * A cluster worker's node options: the primary's (as node:cluster's default), with the old generation's growth and
 * the semi-space cap above added unless the operator chose one: the growth on the command line (Node refuses it in
 * NODE_OPTIONS), the cap on the command line or in NODE_OPTIONS (`nodeOptions`), which a worker inherits and which
 * an option on its command line would override.
 */
export const workerExecArgv = (execArgv: ReadonlyArray<string>, nodeOptions = ""): Array<string> => {
  const chosen = (option: RegExp) => [...execArgv, ...nodeOptions.split(/\s+/)].some((given) => option.test(given))
  return [
    ...execArgv,
    ...(chosen(GROWTH_CHOSEN) ? [] : [`--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}`]),
    ...(chosen(SEMI_SPACE_CHOSEN) ? [] : [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`])
  ]
}

/** The young generation stays as small as it is now (until releaseYoungGeneration). */
export const holdYoungGeneration = (): void => {
  setFlagsFromString("--semi-space-growth-factor=1")
}

/** The young generation grows again as V8 sees fit: for a process that goes on to serve requests or run a command. */
export const releaseYoungGeneration = (): void => {
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`)
}
