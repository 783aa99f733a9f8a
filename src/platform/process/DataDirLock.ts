import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs"
import { join } from "node:path"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

/** What the process holding the data directory is doing: a server holds it until stopped, a command briefly. */
export type LockHolder = "server" | "command"

export class DataDirBusy extends Data.TaggedError("DataDirBusy")<{
  readonly message: string
  /** Whether waiting can help: a server does not let go of the directory by itself. */
  readonly holder: LockHolder
}> {}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

// The lock file reads "<pid> <holder>"; a bare pid (written by older versions) counts as a command.
const readHolder = (text: string): { readonly pid: number; readonly holder: LockHolder } => {
  const [pid = "", holder] = text.trim().split(/\s+/)
  return { pid: Number(pid), holder: holder === "server" ? "server" : "command" }
}

// How long a lock file may stay empty before it counts as left by a process that died between creating and writing it.
const UNWRITTEN_GRACE_MS = 5000

const tryAcquire = (dir: string, holder: LockHolder): Effect.Effect<void, DataDirBusy> =>
  Effect.suspend(() => {
    const path = join(dir, "gatehouse.lock")
    try {
      const fd = openSync(path, "wx", 0o600)
      writeSync(fd, `${process.pid} ${holder}`)
      closeSync(fd)
      return Effect.void
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        return Effect.fail(new DataDirBusy({ message: `could not create ${path}`, holder: "command" }))
      }
    }
    const current = readHolder(readFileSync(path, "utf8"))
    // A file without a pid yet was just created by a process that has not written it: the lock is taken. (Read as
    // a dead holder's, it was taken over, and two `migrate` started together both opened the database.)
    if (!(Number.isInteger(current.pid) && current.pid > 0) && Date.now() - statSync(path).mtimeMs < UNWRITTEN_GRACE_MS) {
      return Effect.fail(new DataDirBusy({ message: `the embedded database in ${dir} is being opened by another Gatehouse process`, holder: "command" }))
    }
    if (Number.isInteger(current.pid) && current.pid > 0 && isAlive(current.pid)) {
      return Effect.fail(new DataDirBusy({
        message: `the embedded database in ${dir} is in use by another Gatehouse process (pid ${current.pid}); ` +
          "stop it or set DATABASE_URL",
        holder: current.holder
      }))
    }
    // The holder died without cleaning up: take the lock over.
    rmSync(path, { force: true })
    return tryAcquire(dir, holder)
  })

/**
 * PGlite is a single process's database: two processes opening one data directory would corrupt it. This
 * lock file (holding the owner's pid and whether it is a server) makes a second Gatehouse wait up to `wait`
 * for a command such as `migrate` to finish, which is how two `migrate` runs started together both succeed.
 * A server holds the directory until it is stopped, so against one the refusal comes at once.
 */
export const lockDataDir = (
  dir: string,
  options: { readonly wait: Duration.DurationInput; readonly holder: LockHolder }
): Effect.Effect<void, DataDirBusy, Scope.Scope> =>
  Effect.acquireRelease(
    tryAcquire(dir, options.holder).pipe(
      Effect.retry({
        schedule: Schedule.spaced("200 millis").pipe(Schedule.upTo(options.wait)),
        while: (busy) => busy.holder === "command"
      })
    ),
    () => Effect.sync(() => rmSync(join(dir, "gatehouse.lock"), { force: true }))
  )
