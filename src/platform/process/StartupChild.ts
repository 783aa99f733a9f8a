import { type ChildProcess, spawn } from "node:child_process"
import type { Teardown } from "@effect/platform/Runtime"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"

/*
 * A cluster primary's start-up work in a process of its own (see cli/PrimaryStartup.ts): the same program, started
 * with the same arguments, node options and environment, plus the mark below that tells it to do that work and exit.
 */

/** The environment variable that makes `gatehouse serve` the start-up process of a cluster primary. */
export const STARTUP_CHILD_MARK = "GATEHOUSE_CLUSTER_STARTUP"

/** Whether this process is a cluster primary's start-up process. */
export const isStartupChild: boolean = process.env[STARTUP_CHILD_MARK] === "1"

/**
 * The start-up process's exit code when a signal stopped it before its work was done. runMain's default would be 0,
 * which the primary would read as "migrated": it would start the workers on a database half migrated.
 */
export const STARTUP_INTERRUPTED = 130

/** The start-up process's exit code: 0 only when its work is done, 1 when it failed (and said why). */
export const startupChildTeardown: Teardown = (exit, onExit) =>
  onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? STARTUP_INTERRUPTED : 1)

/** The start-up process ended without doing its work: `logged` when it has said why itself (it exited non-zero). */
export class StartupChildFailed extends Data.TaggedError("StartupChildFailed")<{
  readonly message: string
  readonly logged: boolean
}> {}

const describeEnd = (child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): Option.Option<StartupChildFailed> =>
  code === 0
    ? Option.none()
    : Option.some(new StartupChildFailed({
      message: signal !== null
        ? `the start-up process (pid ${child.pid}) was ended by ${signal}`
        : code === STARTUP_INTERRUPTED
        ? `the start-up process (pid ${child.pid}) was stopped before its work was done`
        : `the start-up process (pid ${child.pid}) exited with code ${code}`,
      // A process that fails has run far enough to log why (its runMain logs the failure, Node an uncaught error);
      // one stopped by a signal has said nothing.
      logged: signal === null && code !== STARTUP_INTERRUPTED
    }))

/**
 * Runs this program again as the start-up process and waits for it: it writes to this process's stdout and stderr.
 * Interrupted (a signal to the primary), it stops the child with SIGTERM, which its runMain turns into a clean stop,
 * and waits for it.
 */
export const runStartupChild: Effect.Effect<void, StartupChildFailed> = Effect.scoped(Effect.gen(function*() {
  const child = yield* Effect.acquireRelease(
    Effect.sync(() =>
      // As node:cluster forks the workers: this script, its arguments and node options. No IPC channel: it would keep
      // the child alive once its work is done.
      spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...process.argv.slice(2)], {
        env: { ...process.env, [STARTUP_CHILD_MARK]: "1" },
        stdio: "inherit"
      })
    ),
    (child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Effect.void
        : Effect.async<void>((resume) => {
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGTERM")
        })
  )
  const failure = yield* Effect.async<Option.Option<StartupChildFailed>>((resume) => {
    child.once("error", (error) =>
      resume(Effect.succeed(Option.some(new StartupChildFailed({ message: `could not start the start-up process: ${error.message}`, logged: false })))))
    child.once("exit", (code, signal) => resume(Effect.succeed(describeEnd(child, code, signal))))
  })
  if (Option.isSome(failure)) return yield* failure.value
}))
