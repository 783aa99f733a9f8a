import { createWriteStream } from "node:fs"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as List from "effect/List"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import type { LogLevelName } from "../config/PlatformConfig.js"
import { logFormat } from "./LogFormat.js"

const LEVELS: Readonly<Record<LogLevelName, LogLevel.LogLevel>> = {
  panic: LogLevel.Fatal,
  fatal: LogLevel.Fatal,
  error: LogLevel.Error,
  warn: LogLevel.Warning,
  info: LogLevel.Info,
  debug: LogLevel.Debug,
  trace: LogLevel.Trace
}

export const toLogLevel = (name: LogLevelName): LogLevel.LogLevel => LEVELS[name]

/**
 * One JSON object per line: level, time, msg, then the log's annotations (request_id, …) and a rendered cause
 * when there is one. Values are JSON-encoded, so a Redacted value prints as "<redacted>".
 */
export const formatLogLine = (options: Logger.Logger.Options<unknown>): string => {
  const { annotations, cause, context, date, logLevel, message, spans } = options
  const messages = Array.isArray(message) ? message : [message]
  const entry: Record<string, unknown> = {
    level: logLevel.label.toLowerCase(),
    time: date.toISOString(),
    msg: messages.map((m) => (typeof m === "string" ? m : safeJson(m))).join(" ")
  }
  for (const [key, value] of HashMap.toEntries(annotations)) entry[key] = value
  const span = List.head(spans)
  if (Option.isSome(span)) entry["span"] = span.value.label
  // With tracing on, a line says which trace and span it belongs to, so logs and traces can be joined.
  const current = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  if (Option.isSome(current) && current.value.sampled && TRACE_ID.test(current.value.traceId)) {
    entry["trace_id"] = current.value.traceId
    entry["span_id"] = current.value.spanId
  }
  if (!Cause.isEmpty(cause)) entry["error"] = Cause.pretty(cause, { renderErrorCause: true })
  return safeJson(entry)
}

/**
 * The same entry as formatLogLine, for a person at a terminal: local time of day, level, message, then the
 * annotations as key=value (a value with a space, quote or `=` JSON-quoted), all on one line.
 */
export const formatPrettyLine = (options: Logger.Logger.Options<unknown>): string => {
  const { annotations, cause, context, date, logLevel, message, spans } = options
  const messages = Array.isArray(message) ? message : [message]
  let line = `${timeOfDay(date)} ${logLevel.label.padEnd(5)} ${
    messages.map((m) => (typeof m === "string" ? m : safeJson(m))).join(" ").replace(/\r\n|\r|\n/g, "\\n")
  }`
  for (const [key, value] of HashMap.toEntries(annotations)) line += ` ${key}=${prettyValue(value)}`
  const span = List.head(spans)
  if (Option.isSome(span)) line += ` span=${prettyValue(span.value.label)}`
  const current = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  if (Option.isSome(current) && current.value.sampled && TRACE_ID.test(current.value.traceId)) {
    line += ` trace_id=${current.value.traceId} span_id=${current.value.spanId}`
  }
  if (!Cause.isEmpty(cause)) line += ` error=${safeJson(Cause.pretty(cause, { renderErrorCause: true }))}`
  return line
}

const twoDigits = (n: number): string => String(n).padStart(2, "0")

const timeOfDay = (date: Date): string =>
  `${twoDigits(date.getHours())}:${twoDigits(date.getMinutes())}:${twoDigits(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, "0")}`

const BARE = /^[^\s"=]+$/

const prettyValue = (value: unknown): string =>
  typeof value === "string"
    ? BARE.test(value) ? value : safeJson(value)
    : typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : safeJson(value)

// An OpenTelemetry trace id; Effect's spans when nothing exports them carry none worth printing.
const TRACE_ID = /^[0-9a-f]{32}$/

// Every request logs a line at info: the plain stringify is the fast path, the replacer (several times slower)
// only runs for the rare line that holds a bigint.
const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value)
  } catch {
    try {
      return JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? v.toString() : v))
    } catch {
      return JSON.stringify(String(value))
    }
  }
}

/**
 * Logging at LOG_LEVEL: JSON lines appended to LOG_FILE, or to stdout, where a terminal gets readable lines instead
 * (see logFormat). `stdoutIsTerminal` is what Node says of stdout unless a test says otherwise.
 */
export const LoggingLive = (options: {
  readonly level: LogLevelName
  readonly file: Option.Option<string>
  readonly stdoutIsTerminal?: boolean
}): Layer.Layer<never> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const write = yield* Option.match(options.file, {
      onNone: () => Effect.succeed((line: string) => void process.stdout.write(line + "\n")),
      onSome: (path) =>
        Effect.map(
          Effect.acquireRelease(
            Effect.sync(() => createWriteStream(path, { flags: "a" })),
            (stream) => Effect.async<void>((resume) => void stream.end(() => resume(Effect.void)))
          ),
          (stream) => (line: string) => void stream.write(line + "\n")
        )
    })
    const format = logFormat({
      toFile: Option.isSome(options.file),
      stdoutIsTerminal: options.stdoutIsTerminal ?? process.stdout.isTTY === true
    })
    const formatLine = format === "pretty" ? formatPrettyLine : formatLogLine
    const logger = Logger.make((opts) => write(formatLine(opts)))
    return Layer.merge(Logger.replace(Logger.defaultLogger, logger), Logger.minimumLogLevel(toLogLevel(options.level)))
  }))
