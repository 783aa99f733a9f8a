/**
 * The minimal server: what Gatehouse's hot paths cost without a framework. node:http and node:http2, a pg.Pool of
 * 10 per process, @node-rs/bcrypt on the threadpool, HMAC HS256 from node:crypto, PASETO from the same library as
 * Gatehouse, and node:cluster with the same worker count. It runs the statements in MinimalSql.ts.
 */
import { createServer } from "node:http"
import { createServer as createHttp2Server } from "node:http2"
import pg from "pg"
import { runClustered } from "../Clustered.js"
import { bcryptCrypto, minimalAuthHandler } from "./MinimalAuth.js"
import { minimalConfig } from "./MinimalConfig.js"
import { iamKeys, minimalGrpcHandler } from "./MinimalGrpc.js"

const config = minimalConfig(process.env)

const listen = (server: { listen: (port: number, host: string, done: () => void) => unknown; once: (event: "error", f: (e: Error) => void) => unknown }, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, config.host, resolve)
  })

runClustered(config.workers, async () => {
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 })
  pool.on("error", (error) => process.stderr.write(`minimal: idle client error: ${error.message}\n`))
  const crypto = await bcryptCrypto(config.jwtSecret)
  const http = createServer({ keepAliveTimeout: 60_000 }, minimalAuthHandler(pool, crypto, config))
  const grpc = createHttp2Server()
  grpc.on("stream", minimalGrpcHandler(pool, crypto, await iamKeys(config), config))
  await listen(http, config.port)
  await listen(grpc, config.grpcPort)
  const stop = () => {
    http.close()
    grpc.close()
    void pool.end().finally(() => process.exit(0))
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
})
