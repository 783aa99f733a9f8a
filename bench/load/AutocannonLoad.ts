import autocannon from "autocannon"
import type { HttpTarget } from "./HttpClient.js"
import type { MeasuredWindow, WindowSpec } from "./LoadWindow.js"

/**
 * The same request over and over with autocannon, which costs the load generator far less CPU than a Node
 * http.request loop. Its own histogram rounds to whole milliseconds, so the latencies come from its per-response
 * event into the shared window instead.
 */
export const runAutocannon = async (options: {
  readonly target: HttpTarget
  readonly connections: number
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly spec: WindowSpec
  readonly window: MeasuredWindow
}): Promise<void> => {
  let finished!: (error?: unknown) => void
  const done = new Promise<void>((resolve, reject) => (finished = (error) => (error ? reject(error) : resolve())))
  const instance = autocannon({
    url: `http://${options.target.host}:${options.target.port}${options.path}`,
    connections: options.connections,
    // Stopped by the window; the duration is only a backstop a second past it.
    duration: Math.ceil((options.spec.warmupMs + options.spec.durationMs) / 1000) + 1,
    headers: { ...options.headers },
    timeout: 30
  }, (error: unknown) => finished(error))
  instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) options.window.success(responseTime)
    else options.window.failure(`HTTP ${statusCode} GET ${options.path}`)
  })
  instance.on("reqError", (error: Error) => options.window.failure(error.message))
  void options.window.closed.then(() => instance.stop())
  await done
}
