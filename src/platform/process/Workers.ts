import cluster, { type Worker } from "node:cluster"
import { type AddressInfo, createServer, type Server } from "node:net"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import { decideRestart, NO_EXITS, RESTART_POLICY, type RestartPolicy } from "./WorkerRestarts.js"
import { workerExecArgv } from "./YoungGeneration.js"

/*
 * Serving from several processes with node:cluster. The primary forks the workers and keeps them running; each
 * worker builds the ordinary server, and its listen() calls go through the primary, which owns each listening
 * socket and hands every new connection to the next worker in turn (round-robin). Workers keep no state: what
 * must be shared is in PostgreSQL.
 */

/** What a worker tells the primary over the cluster's IPC channel. */
type WorkerMessage =
  | { readonly gatehouse: "ready" }
  | { readonly gatehouse: "start-up failed"; readonly message: string }

const isWorkerMessage = (message: unknown): message is WorkerMessage =>
  typeof message === "object" && message !== null && "gatehouse" in message

export class WorkersFailed extends Data.TaggedError("WorkersFailed")<{ readonly message: string }> {}

/** This process's worker id, when it is a cluster worker. */
export const workerId: Option.Option<number> = Option.fromNullable(cluster.worker?.id)

const tellPrimary = (message: WorkerMessage): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (process.send === undefined) return resume(Effect.void)
    // The callback fires once the message is written, so a worker that exits right after does not lose it.
    process.send(message, undefined, undefined, () => resume(Effect.void))
  })

/** In a worker: the server is built and listening. */
export const reportReady: Effect.Effect<void> = tellPrimary({ gatehouse: "ready" })

/** In a worker: why it could not start, for the primary to log once, whatever the number of workers. */
export const reportStartupFailure = (message: string): Effect.Effect<void> => tellPrimary({ gatehouse: "start-up failed", message })

/**
 * In a worker: a second SIGTERM or SIGINT is ignored. Ctrl-C signals the whole process group and the primary then
 * forwards SIGTERM; without this, the second signal would kill a worker in the middle of its graceful stop.
 * NodeRuntime.runMain handles the first one.
 */
export const ignoreRepeatedSignals = (): void => {
  const ignore = () => undefined
  process.on("SIGTERM", ignore)
  process.on("SIGINT", ignore)
}

/**
 * A free port on each of `hosts`, for the ports configured as 0. Each worker's listen(0) would be matched with the other workers'
 * by the order of their listen calls, so the HTTP and gRPC servers could end up sharing one socket across
 * workers: the primary picks the ports and hands them down instead.
 */
export const freePorts = (hosts: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<number>, WorkersFailed> =>
  // Every probe stays open until all have their port, so two hosts never get the same one.
  Effect.scoped(Effect.forEach(hosts, (host) =>
    Effect.acquireRelease(
      Effect.async<Server, WorkersFailed>((resume) => {
        const server = createServer()
        server.once("error", (error) => resume(Effect.fail(new WorkersFailed({ message: `could not listen: ${error.message}` }))))
        server.listen(0, host, () => resume(Effect.succeed(server)))
      }),
      (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
    ).pipe(Effect.map((server) => (server.address() as AddressInfo).port))))

/** How long after a worker's exit its IPC channel may still deliver its last messages. */
const DISCONNECT_GRACE_MILLIS = 1_000

interface WorkerExit {
  readonly code: number | null
  readonly signal: string | null
  /** What the worker reported before exiting, if it failed to start. */
  readonly failure: Option.Option<string>
}

interface Forked {
  readonly worker: Worker
  readonly ready: Deferred.Deferred<void>
  readonly exited: Deferred.Deferred<WorkerExit>
}

const fork = (env: Readonly<Record<string, string>>): Effect.Effect<Forked> =>
  Effect.sync(() => {
    const worker = cluster.fork(env)
    const ready = Deferred.unsafeMake<void>(FiberId.none)
    const exited = Deferred.unsafeMake<WorkerExit>(FiberId.none)
    let failure = Option.none<string>()
    let status: { code: number | null; signal: string | null } | undefined
    let disconnected = false
    // 'exit' can come before the last IPC message has been read; the channel's close comes after it. But the channel
    // of a worker that exits while the primary is handing it a connection (node:cluster's round-robin, during a
    // shutdown under load) waits for an acknowledgement that never comes, and 'disconnect' never fires: past a
    // grace period, the exit alone settles it, or the primary would wait for it forever.
    const settle = () => {
      if (status !== undefined && disconnected) Deferred.unsafeDone(exited, Exit.succeed({ ...status, failure }))
    }
    worker.on("message", (message: unknown) => {
      if (!isWorkerMessage(message)) return
      if (message.gatehouse === "ready") Deferred.unsafeDone(ready, Exit.void)
      else failure = Option.some(message.message)
    })
    worker.on("error", (error: Error) => {
      if (Option.isNone(failure)) failure = Option.some(error.message)
    })
    worker.on("exit", (code: number | null, signal: string | null) => {
      status = { code, signal }
      settle()
      if (!disconnected) {
        setTimeout(() => {
          disconnected = true
          settle()
        }, DISCONNECT_GRACE_MILLIS)
      }
    })
    worker.on("disconnect", () => {
      disconnected = true
      settle()
    })
    return { worker, ready, exited }
  })

const describeExit = (exit: WorkerExit): string => (exit.signal !== null ? `signal ${exit.signal}` : `code ${exit.code}`)

const label = (forked: Forked): string => `worker ${forked.worker.id} (pid ${forked.worker.process.pid})`

/**
 * Stops a worker still running when its scope closes (shutdown, or another worker's failed start): SIGTERM, which
 * its runMain turns into a graceful stop, then wait for it. A worker that fails to stop cleanly makes the
 * primary's exit code non-zero.
 */
const stop = (forked: Forked): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (yield* Deferred.isDone(forked.exited)) return
    forked.worker.process.kill("SIGTERM")
    const exit = yield* Deferred.await(forked.exited)
    // Killed by our SIGTERM: it had not yet installed its handler (still loading), so there was nothing to finish.
    // One that reported a failed start has said why, and the primary is failing already.
    if (exit.code === 0 || exit.signal === "SIGTERM" || Option.isSome(exit.failure)) return
    process.exitCode = 1
    yield* Effect.logError(`${label(forked)} did not stop cleanly: exited with ${describeExit(exit)}`)
  })

interface Run {
  readonly forked: Forked
  readonly exit: WorkerExit
  /** None: it exited before it was ready. */
  readonly servedForMillis: Option.Option<number>
}

/** One worker from fork to exit, completing `started` once it serves; interrupted, it stops the worker. */
const runOne = (env: Readonly<Record<string, string>>, started: Deferred.Deferred<void>): Effect.Effect<Run> =>
  Effect.scoped(Effect.gen(function*() {
    const forked = yield* Effect.acquireRelease(fork(env), stop)
    const ready = yield* Effect.raceFirst(
      Effect.as(Deferred.await(forked.ready), true),
      Effect.as(Deferred.await(forked.exited), false)
    )
    // The first workers are announced together, by the caller; a replacement on its own.
    if (ready && !(yield* Deferred.succeed(started, undefined))) yield* Effect.logInfo(`${label(forked)} serving`)
    const readyAt = ready ? Option.some(yield* Clock.currentTimeMillis) : Option.none<number>()
    const exit = yield* Deferred.await(forked.exited)
    const now = yield* Clock.currentTimeMillis
    return { forked, exit, servedForMillis: Option.map(readyAt, (at) => now - at) }
  }))

/** Why a worker did not start: what it reported, or how it exited. */
const whyNotStarted = (run: Run): string =>
  Option.getOrElse(run.exit.failure, () => `${label(run.forked)} exited with ${describeExit(run.exit)} before it was ready`)

const exitWarning = (run: Run, delay: string): string =>
  Option.isSome(run.servedForMillis)
    ? `${label(run.forked)} exited with ${describeExit(run.exit)}; starting another in ${delay}`
    : Option.isSome(run.exit.failure)
    ? `${label(run.forked)} could not start: ${run.exit.failure.value}; trying again in ${delay}`
    : `${whyNotStarted(run)}; trying again in ${delay}`

/**
 * One worker slot: a worker, and its replacements when it exits. The first one must start: if it cannot, the
 * configuration or the machine is wrong (port taken), and retrying would only hide it.
 */
const slot = (
  env: Readonly<Record<string, string>>,
  policy: RestartPolicy,
  started: Deferred.Deferred<void>
): Effect.Effect<never, WorkersFailed> =>
  Effect.gen(function*() {
    let history = NO_EXITS
    while (true) {
      const run = yield* runOne(env, started)
      if (!(yield* Deferred.isDone(started))) {
        return yield* new WorkersFailed({ message: `start-up failed: ${whyNotStarted(run)}` })
      }
      const decision = decideRestart(history, run.servedForMillis, policy)
      if (decision._tag === "GiveUp") {
        return yield* new WorkersFailed({
          message: `stopping: workers failed to start ${policy.maxStartFailures} times in a row, the last: ${whyNotStarted(run)}`
        })
      }
      history = decision.history
      yield* Effect.logWarning(exitWarning(run, `${decision.delayMillis}ms`))
      yield* Effect.sleep(decision.delayMillis)
    }
  })

/**
 * In the primary: forks `count` workers with `env` added to their environment, runs `serving` once all of them serve,
 * and keeps that many running until interrupted, when each is stopped gracefully. Fails when the first workers
 * cannot all start, or when replacements keep failing to start.
 */
export const runWorkers = (options: {
  readonly count: number
  readonly env: Readonly<Record<string, string>>
  readonly serving: Effect.Effect<void>
  readonly policy?: RestartPolicy
}): Effect.Effect<never, WorkersFailed> =>
  Effect.gen(function*() {
    // The workers' node options: the primary's, with a smaller young generation and a smaller growth of the old one
    // (YoungGeneration.ts), unless the operator chose them.
    cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env["NODE_OPTIONS"]) })
    const started = yield* Effect.forEach(Array.from({ length: options.count }), () => Deferred.make<void>())
    const slots = started.map((first) => slot(options.env, options.policy ?? RESTART_POLICY, first))
    const allServing = Effect.zipRight(Effect.forEach(started, Deferred.await, { discard: true }), options.serving)
    yield* Effect.all([...slots, allServing], { concurrency: "unbounded", discard: true })
    return yield* Effect.never
  })
