import cluster from "node:cluster"

/**
 * Serves in `workers` node:cluster workers (in this one process when `workers` is 1), as Gatehouse does with
 * AUTH_WORKERS, so both sides of a comparison run the same number of processes. The primary prints "ready" once
 * every worker listens; a worker that dies ends the primary, so a run never goes on with fewer workers unnoticed.
 */
export const runClustered = (workers: number, serve: () => Promise<void>): void => {
  const fail = (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  }
  if (workers <= 1) {
    serve().then(() => process.stdout.write("ready\n"), fail)
    return
  }
  if (cluster.isWorker) {
    serve().then(() => process.send?.("ready"), fail)
    return
  }
  let ready = 0
  let stopping = false
  for (let i = 0; i < workers; i++) {
    cluster.fork().on("message", (message) => {
      if (message === "ready" && ++ready === workers) process.stdout.write("ready\n")
    })
  }
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
      return
    }
    process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); stopping\n`)
    process.exit(1)
  })
  const stop = () => {
    stopping = true
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM")
    setTimeout(() => process.exit(0), 3000).unref()
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
}
