import { type AddressInfo, connect, createServer, type Socket } from "node:net"
import { Effect, Option, Redacted, type Scope } from "effect"
import { PostgresDatabase } from "../../src/platform/sql/Database.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "./TestDatabase.js"

/**
 * A TCP proxy on 127.0.0.1 in front of a database, that a test can cut (every open connection dropped, new ones
 * refused) and restore: a database outage without stopping the database other tests share.
 */
export interface CuttableProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: string
  readonly cut: () => void
  readonly restore: () => void
}

export const cuttableProxy = (url: string): Effect.Effect<CuttableProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    const target = new URL(url)
    const open = new Set<Socket>()
    let down = false
    const server = createServer((client) => {
      if (down) return void client.destroy()
      const upstream = connect(Number(target.port), target.hostname)
      for (const socket of [client, upstream]) {
        open.add(socket)
        socket.on("error", () => socket.destroy())
        socket.on("close", () => {
          open.delete(socket)
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream).pipe(client)
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))),
      () => Effect.async<void>((resume) => {
        for (const socket of open) socket.destroy()
        server.close(() => resume(Effect.void))
      })
    )
    const proxied = new URL(url)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(port)
    return {
      url: proxied.toString(),
      cut: () => {
        down = true
        for (const socket of open) socket.destroy()
      },
      restore: () => {
        down = false
      }
    }
  })

/**
 * A fresh database on the suite's PostgreSQL (DATABASE_URL), migrated for `namespace`, behind a cuttable proxy:
 * servers connect through `proxy.url`; `url` reaches the database directly (for checks by SQL during an outage).
 */
export const migratedBehindProxy = (namespace: string): Effect.Effect<{ readonly url: string; readonly proxy: CuttableProxy }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { url } = yield* freshDatabaseUrl(Option.getOrThrow(externalDatabaseUrl))
    yield* migrate({ namespace }).pipe(
      Effect.provide(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 1 })),
      Effect.orDie
    )
    return { url, proxy: yield* cuttableProxy(url) }
  })
