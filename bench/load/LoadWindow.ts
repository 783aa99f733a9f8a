import { performance } from "node:perf_hooks"

/** Warm-up then a measured window, both in milliseconds. */
export interface WindowSpec {
  readonly warmupMs: number
  readonly durationMs: number
}

/** Called when the measured window opens and closes: the CPU and statement readings are taken there. */
export interface WindowHooks {
  readonly onOpen: () => void
  readonly onClose: () => void
}

export interface WindowResult {
  /** Responses completed inside the window, successes and failures. */
  readonly requests: number
  readonly errors: number
  readonly firstError?: string
  readonly elapsedMs: number
  /** Latencies of the successful responses completed inside the window. */
  readonly latenciesMs: ReadonlyArray<number>
}

/**
 * The measured window of one load run. Its bounds are the moments the hooks actually ran (a busy event loop fires
 * timers late), so the counted responses and the CPU readings cover exactly the same interval.
 */
export class MeasuredWindow {
  private openedAt: number | undefined
  private closedAt: number | undefined
  private readonly latencies: Array<number> = []
  private requestCount = 0
  private errorCount = 0
  private firstErrorText: string | undefined
  private readonly timers: Array<NodeJS.Timeout>
  readonly closed: Promise<void>

  constructor(spec: WindowSpec, hooks: WindowHooks) {
    let resolveClosed!: () => void
    this.closed = new Promise((resolve) => (resolveClosed = resolve))
    this.timers = [
      setTimeout(() => {
        hooks.onOpen()
        this.openedAt = performance.now()
      }, spec.warmupMs),
      setTimeout(() => {
        this.closedAt = performance.now()
        hooks.onClose()
        resolveClosed()
      }, spec.warmupMs + spec.durationMs)
    ]
  }

  get isClosed(): boolean {
    return this.closedAt !== undefined
  }

  private get isOpen(): boolean {
    return this.openedAt !== undefined && this.closedAt === undefined
  }

  success(latencyMs: number): void {
    if (!this.isOpen) return
    this.requestCount++
    this.latencies.push(latencyMs)
  }

  failure(error: string): void {
    if (!this.isOpen) return
    this.requestCount++
    this.errorCount++
    this.firstErrorText ??= error
  }

  cancel(): void {
    this.timers.forEach(clearTimeout)
  }

  result(): WindowResult {
    return {
      requests: this.requestCount,
      errors: this.errorCount,
      ...(this.firstErrorText === undefined ? {} : { firstError: this.firstErrorText }),
      elapsedMs: (this.closedAt ?? performance.now()) - (this.openedAt ?? performance.now()),
      latenciesMs: this.latencies
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * `concurrency` loops, each sending one request at a time until the window closes: a closed-loop load where each
 * request can carry a fresh body. `send` resolves when the response is complete and rejects on any failure.
 */
export const runLoops = async (options: {
  readonly concurrency: number
  readonly window: MeasuredWindow
  readonly send: (slot: number) => Promise<void>
}): Promise<void> => {
  const { window } = options
  const loop = async (slot: number): Promise<void> => {
    while (!window.isClosed) {
      const started = performance.now()
      try {
        await options.send(slot)
        window.success(performance.now() - started)
      } catch (error) {
        window.failure(error instanceof Error ? error.message : String(error))
        // A failing server answers at once; without a pause the loop would spin and starve the event loop.
        await sleep(20)
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, (_, slot) => loop(slot)))
}
