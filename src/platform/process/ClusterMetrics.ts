import cluster, { type Worker } from "node:cluster"
import type { Resource as OtelResource } from "@opentelemetry/resources"
import { type CollectionResult, MetricReader, type MetricData, type MetricProducer, type ScopeMetrics } from "@opentelemetry/sdk-metrics"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * Prometheus scrapes one address, but in a cluster (AUTH_WORKERS > 1) the workers share the ports: a scrape
 * served by a worker would show that worker's counts only, a different one each time. So the primary serves
 * the scrape: it asks every worker for its metrics over the cluster's IPC channel and answers with all of
 * them, each series labelled with its `worker`. (Summing over workers is the query's job, as for any fleet.)
 */

// Not the `gatehouse` key: the worker supervisor reads every message carrying that one as a start-up report.
interface CollectRequest {
  readonly gatehouseMetrics: "collect"
  readonly id: number
}
interface CollectAnswer {
  readonly gatehouseMetrics: "collected"
  readonly id: number
  readonly scopeMetrics: ReadonlyArray<ScopeMetrics>
}

const isCollectRequest = (message: unknown): message is CollectRequest =>
  typeof message === "object" && message !== null && (message as Partial<CollectRequest>).gatehouseMetrics === "collect"

const isCollectAnswer = (message: unknown): message is CollectAnswer =>
  typeof message === "object" && message !== null && (message as Partial<CollectAnswer>).gatehouseMetrics === "collected"

/** A reader that only collects when asked: a cluster worker's, read by the primary. */
export class CollectingReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** In a worker: answers the primary's collect requests with this process's metrics, for as long as the scope lasts. */
export const answerMetricsRequests = (reader: CollectingReader): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const onMessage = (message: unknown) => {
        if (!isCollectRequest(message) || process.send === undefined) return
        void reader.collect().then(
          ({ resourceMetrics }) => ({ scopeMetrics: resourceMetrics.scopeMetrics }),
          () => ({ scopeMetrics: [] })
        ).then(({ scopeMetrics }) => {
          const answer: CollectAnswer = { gatehouseMetrics: "collected", id: message.id, scopeMetrics }
          if (process.connected) process.send?.(answer)
        })
      }
      process.on("message", onMessage)
      return onMessage
    }),
    (onMessage) => Effect.sync(() => void process.off("message", onMessage))
  )

// A worker that does not answer in time (busy, stopping) is left out of this scrape rather than holding it.
const COLLECT_TIMEOUT_MS = 2000

let nextRequest = 0

const collectFrom = (worker: Worker): Promise<ReadonlyArray<ScopeMetrics>> =>
  new Promise((resolve) => {
    const id = ++nextRequest
    const done = (scopeMetrics: ReadonlyArray<ScopeMetrics>) => {
      clearTimeout(timer)
      worker.off("message", onMessage)
      resolve(scopeMetrics)
    }
    const onMessage = (message: unknown) => {
      if (isCollectAnswer(message) && message.id === id) done(message.scopeMetrics)
    }
    const timer = setTimeout(() => done([]), COLLECT_TIMEOUT_MS)
    worker.on("message", onMessage)
    const request: CollectRequest = { gatehouseMetrics: "collect", id }
    if (!worker.isConnected()) return done([])
    worker.send(request)
  })

/**
 * Every worker's scopes merged into one list: one entry per scope and metric name, holding the data points of
 * all workers, each with a `worker` attribute (the Prometheus text format allows a metric family only once).
 */
export const mergeWorkerMetrics = (
  byWorker: ReadonlyArray<{ readonly worker: string; readonly scopeMetrics: ReadonlyArray<ScopeMetrics> }>
): Array<ScopeMetrics> => {
  const scopes = new Map<string, { scope: ScopeMetrics["scope"]; metrics: Map<string, MetricData> }>()
  for (const { scopeMetrics, worker } of byWorker) {
    for (const { metrics, scope } of scopeMetrics) {
      const entry = scopes.get(scope.name) ?? { scope, metrics: new Map<string, MetricData>() }
      scopes.set(scope.name, entry)
      for (const metric of metrics) {
        const points = metric.dataPoints.map((point) => ({ ...point, attributes: { ...point.attributes, worker } }))
        const seen = entry.metrics.get(metric.descriptor.name)
        entry.metrics.set(
          metric.descriptor.name,
          (seen === undefined ? { ...metric, dataPoints: points } : { ...seen, dataPoints: [...seen.dataPoints, ...points] }) as MetricData
        )
      }
    }
  }
  return [...scopes.values()].map(({ metrics, scope }) => ({ scope, metrics: [...metrics.values()] }))
}

/** In the primary: the workers' metrics, collected when the primary's reader is scraped. */
export const workersMetricProducer = (resource: OtelResource): MetricProducer => ({
  collect: async (): Promise<CollectionResult> => {
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
    const byWorker = await Promise.all(workers.map(async (worker) => ({ worker: String(worker.id), scopeMetrics: await collectFrom(worker) })))
    return { resourceMetrics: { resource, scopeMetrics: mergeWorkerMetrics(byWorker) }, errors: [] }
  }
})
