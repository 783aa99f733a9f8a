import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { lockDataDir } from "../../src/platform/process/DataDirLock.js"

const withDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "gatehouse-lock-"))),
    f,
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

describe("lockDataDir", () => {
  it.live("treats a lock file not yet written (just created by another process) as taken, not as left behind", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        writeFileSync(join(dir, "gatehouse.lock"), "")
        const exit = yield* Effect.exit(Effect.scoped(lockDataDir(dir, { wait: "300 millis", holder: "command" })))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(readFileSync(join(dir, "gatehouse.lock"), "utf8")).toBe("")
      })))

  it.live("takes over a lock file left empty long ago, and one whose process is gone", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const path = join(dir, "gatehouse.lock")
        writeFileSync(path, "")
        const past = new Date(Date.now() - 60_000)
        utimesSync(path, past, past)
        yield* Effect.scoped(Effect.zipRight(
          lockDataDir(dir, { wait: "300 millis", holder: "command" }),
          Effect.sync(() => expect(readFileSync(path, "utf8")).toBe(`${process.pid} command`))
        ))
        writeFileSync(path, "2147483646 server")
        yield* Effect.scoped(lockDataDir(dir, { wait: "300 millis", holder: "server" }))
      })))

  it.live("refuses at once a directory a live server holds", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        writeFileSync(join(dir, "gatehouse.lock"), `${process.pid} server`)
        const exit = yield* Effect.exit(Effect.scoped(lockDataDir(dir, { wait: "10 seconds", holder: "command" })))
        expect(exit).toMatchObject({ _tag: "Failure" })
        expect(JSON.stringify(exit)).toContain(`pid ${process.pid}`)
      })))
})
