import type { IncomingMessage, Server, ServerResponse } from "node:http"

/**
 * Makes `server` keep the requests that arrive after it listens and before an app is attached, and hand them to the
 * app once it is. node:http drops a request no 'request' listener is there for, and NodeHttpServer listens while its
 * layer is built, before the routes' layers are; in a cluster the primary deals a worker connections from the moment
 * it listens, so a restarted worker would otherwise lose the first requests it is given, their clients left waiting.
 * A server closed before any app came (stopped while starting) answers what it held with 503.
 */
export const holdEarlyRequests = (server: Server): Server => {
  let held: Array<readonly [IncomingMessage, ServerResponse]> = []
  const hold = (request: IncomingMessage, response: ServerResponse) => void held.push([request, response])
  const release = (event: string | symbol) => {
    if (event !== "request") return
    server.off("newListener", release)
    server.off("request", hold)
    const waiting = held
    held = []
    // 'newListener' comes just before the app's listener is added.
    process.nextTick(() => waiting.forEach(([request, response]) => server.emit("request", request, response)))
  }
  server.on("request", hold)
  server.on("newListener", release)
  const close = server.close.bind(server)
  server.close = ((callback?: (error?: Error) => void) => {
    for (const [, response] of held) response.writeHead(503, { connection: "close" }).end()
    held = []
    return close(callback)
  }) as Server["close"]
  return server
}
