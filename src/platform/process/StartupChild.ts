import { type ChildProcess, spawn } from "node:child_process"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/*
 * A cluster primary's start-up work in a process of its own (see cli/PrimaryStartup.ts): the same program, started
 * with the same arguments, node options and environment, plus the mark below that tells it to do that work and exit.
 */

/** The environment variable that makes `gatehouse serve` the start-up process of a cluster primary. */
export const STARTUP_CHILD_MARK = "GATEHOUSE_CLUSTER_STARTUP"

/** Whether this process is a cluster primary's start-up process. */
export const isStartupChild: boolean = process.env[STARTUP_CHILD_MARK] === "1"

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
        : `the start-up process (pid ${child.pid}) exited with code ${code}`,
      // A process that exits with a code has run far enough to log (its runMain logs the failure, Node an uncaught
      // error); one ended by a signal (the OOM killer) has said nothing.
      logged: signal === null
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
