/**
 * What to undo, newest first: servers, then PostgreSQL, then the temporary directory. Runs once, on success, on
 * failure and on Ctrl-C alike, and each step is bounded so a stuck one cannot keep the others from running.
 */
export class Cleanup {
  private readonly steps: Array<{ readonly name: string; readonly run: () => Promise<void> | void }> = []
  private running: Promise<void> | undefined

  add(name: string, run: () => Promise<void> | void): void {
    this.steps.push({ name, run })
  }

  runAll(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        try {
          await Promise.race([
            Promise.resolve().then(step.run),
            new Promise((_, reject) => setTimeout(() => reject(new Error("timed out after 40 s")), 40_000).unref())
          ])
        } catch (error) {
          process.stderr.write(`cleanup: ${step.name} failed: ${error instanceof Error ? error.message : String(error)}\n`)
        }
      }
    })()
    return this.running
  }

  /** Ctrl-C (or a TERM) cleans up before exiting instead of leaving servers and a database behind. */
  exitOnSignals(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      process.stderr.write(`\n${signal}: stopping servers and PostgreSQL…\n`)
      void this.runAll().finally(() => process.exit(130))
    }
    process.once("SIGINT", onSignal)
    process.once("SIGTERM", onSignal)
  }
}
