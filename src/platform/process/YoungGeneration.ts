import cluster from "node:cluster"
import { setFlagsFromString } from "node:v8"

/*
 * V8's young generation (the new space, two semi-spaces) holds a process's short-lived objects. Node lets it grow to
 * 2 × 16 MB, and it does during start-up, when loading the modules leaves most objects alive: every Gatehouse process
 * then holds about 30 MB of new space, resident, whatever it does afterwards. Two processes serve requests with less:
 * - A cluster's workers are started with a smaller cap (--max-semi-space-size, workerExecArgv below), and a smaller
 *   growth of their old generation (--heap-growing-percent), where their growth under load is.
 * - The primary, which serves nothing, never lets it grow (holdYoungGeneration). Its own node options are the
 *   operator's, so this sets V8's growth factor at run time, before any module of the program is loaded. The factor
 *   is read each time V8 considers growing the new space; 1 means "no bigger than now", which V8 handles as a
 *   normal decision not to grow. A single process serving requests (AUTH_WORKERS=1, the embedded database) and the
 *   commands get the default back (releaseYoungGeneration) before they start their work.
 */

/** Each semi-space of a worker, in MB: V8 grows it up to this from 1 MB. */
export const WORKER_SEMI_SPACE_MB = 4

/**
 * How far a worker's old generation may grow past what the last full GC left alive, in percent. Under load most of
 * a worker's growth is there: objects of requests in flight survive two scavenges, are promoted, and die; V8's own
 * factor (up to 4×) lets them pile up to 70 MB over a live heap of 40 MB before it collects (workers at 160–230 MB
 * under GET /user). At 20 % they are collected every ~8 MB (V8's minimum step): workers stayed under 131 MB.
 */
export const WORKER_HEAP_GROWING_PERCENT = 20

const DEFAULT_GROWTH_FACTOR = 2

const WORKER_OPTIONS: ReadonlyArray<{ readonly chosen: RegExp; readonly option: string }> = [
  { chosen: /^--max[-_]semi[-_]space[-_]size\b/, option: `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}` },
  { chosen: /^--heap[-_]growing[-_]percent\b/, option: `--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}` }
]

/**
 * A cluster worker's node options: the primary's (as node:cluster's default), with the heap sizes above added, each
 * unless the operator chose it, on the command line or in NODE_OPTIONS (which the workers inherit; V8 refuses
 * --heap-growing-percent there, so that one only on the command line).
 */
export const workerExecArgv = (execArgv: ReadonlyArray<string>, nodeOptions: string | undefined): Array<string> => {
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)]
  return [...execArgv, ...WORKER_OPTIONS.filter(({ chosen }) => !given.some((option) => chosen.test(option))).map(({ option }) => option)]
}

/** In the process an operator started (not a cluster worker): the young generation stays as small as it is now. */
export const holdYoungGeneration = (): void => {
  if (cluster.isPrimary) setFlagsFromString("--semi-space-growth-factor=1")
}

/** The young generation grows again as V8 sees fit: for a process that goes on to serve requests or run a command. */
export const releaseYoungGeneration = (): void => {
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`)
}
