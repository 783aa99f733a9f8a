/** How log lines are written: JSON lines for log collectors, or one readable line per entry for a person. */
export type LogFormat = "json" | "pretty"

/**
 * Readable lines only where a person reads them as they come: stdout (no LOG_FILE) when it is a terminal. A file,
 * a pipe or a container's log driver gets JSON lines, which collectors parse and a `jq` reads.
 */
export const logFormat = (destination: { readonly toFile: boolean; readonly stdoutIsTerminal: boolean }): LogFormat =>
  !destination.toFile && destination.stdoutIsTerminal ? "pretty" : "json"
