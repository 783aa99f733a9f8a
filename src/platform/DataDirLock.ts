import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Data, type Duration, Effect, Schedule, type Scope } from "effect"

export class DataDirBusy extends Data.TaggedError("DataDirBusy")<{ readonly message: string }> {}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tryAcquire = (path: string): Effect.Effect<void, DataDirBusy> =>
  Effect.suspend(() => {
    try {
      const fd = openSync(path, "wx", 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return Effect.void
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        return Effect.fail(new DataDirBusy({ message: `could not create ${path}` }))
      }
    }
    const holder = Number(readFileSync(path, "utf8").trim())
    if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
      return Effect.fail(new DataDirBusy({
        message: `the embedded database in ${path.replace(/\/gatehouse\.lock$/, "")} is in use by process ${holder}`
      }))
    }
    // The holder died without cleaning up: take the lock over.
    rmSync(path, { force: true })
    return tryAcquire(path)
  })

/**
 * PGlite is a single process's database: two processes opening one data directory would corrupt it. This
 * lock file (holding the owner's pid) makes a second Gatehouse wait up to `wait` for the first to finish,
 * which is how two `migrate` runs started together both succeed, and then refuse with a clear message.
 */
export const lockDataDir = (dir: string, wait: Duration.DurationInput): Effect.Effect<void, DataDirBusy, Scope.Scope> =>
  Effect.acquireRelease(
    tryAcquire(join(dir, "gatehouse.lock")).pipe(
      Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo(wait)))
    ),
    () => Effect.sync(() => rmSync(join(dir, "gatehouse.lock"), { force: true }))
  )
