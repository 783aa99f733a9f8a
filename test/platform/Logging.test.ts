import { describe, expect, it, vi } from "@effect/vitest"
import { Cause, Effect, FastCheck, Logger, LogLevel, Option, Redacted, TestClock } from "effect"
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { logFormat } from "../../src/platform/LogFormat.js"
import { formatLogLine, formatPrettyLine, LoggingLive } from "../../src/platform/Logging.js"

const secret = "hunter2-super-secret-7f3a"

/** Runs `program` with `format` (formatLogLine unless told) as the only logger and returns the lines it wrote. */
const linesOf = <A, E>(program: Effect.Effect<A, E>, format = formatLogLine) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = Logger.make((options) => void lines.push(format(options)))
    yield* program.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    return lines
  })

const parse = (line: string): Record<string, unknown> => {
  expect(line).not.toContain("\n")
  const value: unknown = JSON.parse(line)
  expect(typeof value).toBe("object")
  return value as Record<string, unknown>
}

describe("formatLogLine", () => {
  it.effect("writes one JSON object per entry with level, time, msg and annotations", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2024, 4, 6, 7, 8, 9, 123))
      const lines = yield* linesOf(
        Effect.logInfo("request finished").pipe(
          Effect.annotateLogs({ request_id: "req-1", status: 200, method: "POST" })
        )
      )

      expect(lines).toHaveLength(1)
      expect(parse(lines[0]!)).toStrictEqual({
        level: "info",
        time: "2024-05-06T07:08:09.123Z",
        msg: "request finished",
        request_id: "req-1",
        status: 200,
        method: "POST"
      })
    }))

  it.effect("names each level in lower case", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(
        Effect.all([Effect.logWarning("w"), Effect.logError("e"), Effect.logFatal("f")]).pipe(
          Effect.zipRight(Effect.logDebug("d")),
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
      )

      expect(lines.map((line) => parse(line)["level"])).toStrictEqual(["warn", "error", "fatal", "debug"])
    }))

  it.effect("joins several messages and encodes non-strings as JSON", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(Effect.log("user", { id: 7 }, "signed in", 3n))

      expect(parse(lines[0]!)["msg"]).toBe("user {\"id\":7} signed in \"3\"")
    }))

  it.effect("keeps multi-line messages on one line", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(Effect.log("first\nsecond"))

      expect(lines).toHaveLength(1)
      expect(parse(lines[0]!)["msg"]).toBe("first\nsecond")
    }))

  it.effect("renders a Redacted annotation or message as <redacted> and never its text", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(
        Effect.log("token", Redacted.make(secret)).pipe(
          Effect.annotateLogs("password", Redacted.make(secret)),
          Effect.annotateLogs("nested", { key: Redacted.make(secret) })
        )
      )
      const entry = parse(lines[0]!)

      expect(entry["password"]).toBe("<redacted>")
      expect(entry["nested"]).toStrictEqual({ key: "<redacted>" })
      expect(entry["msg"]).toBe("token \"<redacted>\"")
      expect(lines[0]).not.toContain(secret)
    }))

  it.effect("renders a cause under error", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(Effect.logError("unexpected failure", Cause.die(new Error("kaput"))))
      const entry = parse(lines[0]!)

      expect(entry["msg"]).toBe("unexpected failure")
      expect(entry["level"]).toBe("error")
      expect(entry["error"]).toEqual(expect.stringContaining("kaput"))
    }))

  it.effect("leaves error out when there is no cause", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(Effect.logInfo("fine"))

      expect(parse(lines[0]!)).not.toHaveProperty("error")
    }))

  it.effect("names the innermost span", () =>
    Effect.gen(function*() {
      const lines = yield* linesOf(Effect.log("inside").pipe(Effect.withLogSpan("inner"), Effect.withLogSpan("outer")))

      expect(parse(lines[0]!)["span"]).toBe("inner")
    }))

  it.effect("says which trace and span a line was logged in, and nothing when no span is traced", () =>
    Effect.gen(function*() {
      const [traced] = yield* linesOf(Effect.flatMap(Effect.currentSpan, (span) =>
        Effect.logInfo("traced").pipe(Effect.annotateLogs({ expected: `${span.traceId}/${span.spanId}` }))).pipe(Effect.withSpan("work")))
      const entry = parse(traced!)
      expect(entry["trace_id"]).toMatch(/^[0-9a-f]{32}$/)
      expect(`${entry["trace_id"]}/${entry["span_id"]}`).toBe(entry["expected"])

      const [untraced] = yield* linesOf(Effect.logInfo("plain"))
      expect(parse(untraced!)).not.toHaveProperty("trace_id")
      const [disabled] = yield* linesOf(Effect.logInfo("off").pipe(Effect.withSpan("work"), Effect.withTracerEnabled(false)))
      expect(parse(disabled!)).not.toHaveProperty("trace_id")
    }))
})

describe("formatPrettyLine", () => {
  const pretty = <A, E>(program: Effect.Effect<A, E>) => linesOf(program, formatPrettyLine)
  const at = new Date(2024, 4, 6, 7, 8, 9, 45)

  it.effect("writes the local time of day, the level, the message and the annotations as key=value", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(at.getTime())
      const lines = yield* pretty(
        Effect.logInfo("request").pipe(Effect.annotateLogs({ method: "GET", path: "/health", status: 200, ok: true }))
      )

      expect(lines).toHaveLength(1)
      // Annotations come in the order Effect keeps them, which is not the order they were given.
      const [head, ...pairs] = lines[0]!.split(" request ")
      expect(head).toBe("07:08:09.045 INFO ")
      expect(pairs.join(" request ").split(" ").sort()).toStrictEqual(["method=GET", "ok=true", "path=/health", "status=200"])
    }))

  it.effect("quotes a value with a space, a quote or an equals sign, and encodes objects as JSON", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(at.getTime())
      const [line] = yield* pretty(
        Effect.logWarning("w").pipe(Effect.annotateLogs({ a: "two words", b: "x=y", c: "say \"hi\"", d: "", e: { k: [1] } }))
      )

      expect(line!.startsWith("07:08:09.045 WARN  w ")).toBe(true)
      for (const pair of ["a=\"two words\"", "b=\"x=y\"", "c=\"say \\\"hi\\\"\"", "d=\"\"", "e={\"k\":[1]}"]) {
        expect(line).toContain(` ${pair}`)
      }
    }))

  it.effect("keeps an entry on one line: a multi-line message, a cause with its stack", () =>
    Effect.gen(function*() {
      const lines = yield* pretty(
        Effect.logError("first\nsecond", "third").pipe(Effect.zipRight(Effect.logError("failed", Cause.die(new Error("kaput")))))
      )

      expect(lines).toHaveLength(2)
      for (const line of lines) expect(line).not.toMatch(/[\r\n]/)
      expect(lines[0]).toMatch(/ ERROR first\\nsecond third$/)
      expect(lines[1]).toMatch(/ ERROR failed error="Error: kaput\\n/)
    }))

  it.effect("renders a Redacted annotation or message as <redacted> and never its text", () =>
    Effect.gen(function*() {
      const [line] = yield* pretty(
        Effect.log("token", Redacted.make(secret)).pipe(Effect.annotateLogs({ password: Redacted.make(secret), nested: { key: Redacted.make(secret) } }))
      )

      expect(line).toContain("token \"<redacted>\"")
      expect(line).toContain("password=\"<redacted>\"")
      expect(line).toContain("nested={\"key\":\"<redacted>\"}")
      expect(line).not.toContain(secret)
    }))

  it.effect("names the innermost span and a traced line's trace", () =>
    Effect.gen(function*() {
      const [spanned] = yield* pretty(Effect.log("inside").pipe(Effect.withLogSpan("inner"), Effect.withLogSpan("outer")))
      expect(spanned).toMatch(/ span=inner$/)
      const [traced] = yield* pretty(Effect.flatMap(Effect.currentSpan, (span) =>
        Effect.logInfo("traced").pipe(Effect.annotateLogs({ expected: `${span.traceId}/${span.spanId}` }))).pipe(Effect.withSpan("work")))
      const [, traceId, spanId] = / trace_id=([0-9a-f]{32}) span_id=(\S+)/.exec(traced!)!
      expect(traced).toContain(`expected=${traceId}/${spanId}`)
    }))
})

describe("logFormat", () => {
  it.prop(
    "readable lines only on stdout that is a terminal; a file, a pipe or a collector gets JSON",
    { toFile: FastCheck.boolean(), stdoutIsTerminal: FastCheck.boolean() },
    (destination) => {
      expect(logFormat(destination)).toBe(!destination.toFile && destination.stdoutIsTerminal ? "pretty" : "json")
    }
  )
})

describe("LoggingLive", () => {
  const tempFile = Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "gatehouse-logging-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => join(dir, "auth.log")))

  it.scoped("appends JSON lines to LOG_FILE and drops entries below the minimum level", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      appendFileSync(file, "{\"msg\":\"from before\"}\n")

      yield* Effect.gen(function*() {
        yield* Effect.logDebug("debug detail")
        yield* Effect.logInfo("server started").pipe(Effect.annotateLogs("port", 9999))
        yield* Effect.logWarning("slow query").pipe(Effect.annotateLogs("secret", Redacted.make(secret)))
        yield* Effect.logTrace("trace detail")
      }).pipe(Effect.provide(LoggingLive({ level: "info", file: Option.some(file) })))

      const content = readFileSync(file, "utf8")
      expect(content).not.toContain(secret)
      const lines = content.split("\n")
      expect(lines.at(-1)).toBe("")
      const entries = lines.slice(0, -1).map(parse)
      expect(entries).toHaveLength(3)
      expect(entries[0]).toStrictEqual({ msg: "from before" })
      expect(entries[1]).toMatchObject({ level: "info", msg: "server started", port: 9999 })
      expect(entries[2]).toMatchObject({ level: "warn", msg: "slow query", secret: "<redacted>" })
    }))

  /** What LoggingLive writes to stdout while `program` runs (the test runner's own output left out). */
  const stdoutOf = (program: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
        written.push(String(chunk))
        return true
      })
      yield* Effect.ensuring(program, Effect.sync(() => spy.mockRestore()))
      return written.filter((chunk) => chunk.includes("to a "))
    })

  it.effect("writes readable lines to stdout when it is a terminal", () =>
    Effect.gen(function*() {
      const written = yield* stdoutOf(Effect.logInfo("to a person").pipe(
        Effect.annotateLogs("port", 9999),
        Effect.provide(LoggingLive({ level: "info", file: Option.none(), stdoutIsTerminal: true }))
      ))

      expect(written).toHaveLength(1)
      expect(written[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  to a person port=9999\n$/)
    }))

  it.effect("writes JSON lines to stdout when it is not a terminal", () =>
    Effect.gen(function*() {
      const written = yield* stdoutOf(Effect.logInfo("to a collector").pipe(
        Effect.provide(LoggingLive({ level: "info", file: Option.none(), stdoutIsTerminal: false }))
      ))

      expect(written).toHaveLength(1)
      expect(parse(written[0]!.trimEnd())).toMatchObject({ level: "info", msg: "to a collector" })
    }))

  it.scoped("keeps JSON lines in LOG_FILE even when stdout is a terminal", () =>
    Effect.gen(function*() {
      const file = yield* tempFile

      yield* Effect.logInfo("kept").pipe(Effect.provide(LoggingLive({ level: "info", file: Option.some(file), stdoutIsTerminal: true })))

      expect(parse(readFileSync(file, "utf8").trimEnd())).toMatchObject({ level: "info", msg: "kept" })
    }))

  it.scoped("writes debug lines at the debug level", () =>
    Effect.gen(function*() {
      const file = yield* tempFile

      yield* Effect.all([Effect.logDebug("debug detail"), Effect.logTrace("trace detail")]).pipe(
        Effect.provide(LoggingLive({ level: "debug", file: Option.some(file) }))
      )

      const entries = readFileSync(file, "utf8").trimEnd().split("\n").map(parse)
      expect(entries.map((entry) => entry["msg"])).toStrictEqual(["debug detail"])
    }))
})
