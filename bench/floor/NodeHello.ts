/** The framework floor, bare side: node:http answering GET /user with a user-like JSON, no database. */
import { createServer } from "node:http"
import { runClustered } from "../Clustered.js"
import { HELLO_USER } from "./HelloUser.js"

const port = Number(process.env.PORT)

runClustered(Number(process.env.AUTH_WORKERS ?? "1"), () =>
  new Promise<void>((resolve, reject) => {
    const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      if (req.method === "GET" && req.url === "/user") {
        const json = JSON.stringify(HELLO_USER)
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
        res.end(json)
      } else {
        res.writeHead(404).end()
      }
    })
    server.once("error", reject)
    server.listen(port, "127.0.0.1", resolve)
    process.on("SIGTERM", () => process.exit(0))
  }))
