import { createServer, request, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { holdEarlyRequests } from "../../src/platform/http/EarlyRequests.js"

const servers: Array<Server> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections()
})

const listening = async (): Promise<{ readonly server: Server; readonly port: number }> => {
  const server = holdEarlyRequests(createServer())
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as AddressInfo).port }
}

const get = (port: number, path: string) =>
  new Promise<{ readonly status: number; readonly body: string }>((resolve, reject) => {
    request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = ""
      res.on("data", (d) => (body += d))
      res.on("end", () => resolve({ status: res.statusCode!, body }))
    }).on("error", reject).end()
  })

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("holdEarlyRequests", () => {
  it("answers the requests that came before the app, in order, once it is attached; later ones directly", async () => {
    const { port, server } = await listening()
    const early = [get(port, "/one"), get(port, "/two")]
    await tick(200)
    const seen: Array<string> = []
    server.on("request", (req, res) => {
      seen.push(req.url!)
      res.end(`served ${req.url}`)
    })
    expect(await Promise.all(early)).toStrictEqual([{ status: 200, body: "served /one" }, { status: 200, body: "served /two" }])
    expect(await get(port, "/three")).toStrictEqual({ status: 200, body: "served /three" })
    expect(seen).toStrictEqual(["/one", "/two", "/three"])
  })

  it("answers what it holds with 503 when closed before any app came", async () => {
    const { port, server } = await listening()
    const early = get(port, "/held")
    await tick(200)
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    expect((await early).status).toBe(503)
    await closed
  })

  it("answers 503 with Connection: close to a request that comes after the app was detached, before the port closes", async () => {
    const { port, server } = await listening()
    const app = (_req: unknown, res: { end: (body: string) => void }) => res.end("served")
    server.on("request", app)
    expect(await get(port, "/before")).toStrictEqual({ status: 200, body: "served" })
    server.off("request", app)
    const late = await Promise.race([get(port, "/late"), tick(2_000).then(() => "no answer" as const)])
    expect(late).toStrictEqual({ status: 503, body: "" })
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
})
