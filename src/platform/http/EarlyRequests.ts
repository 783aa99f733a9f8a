import type { IncomingMessage, Server, ServerResponse } from "node:http"

/**
 * Makes `server` keep the requests that arrive after it listens and before an app is attached, and hand them to the
 * app once it is. node:http drops a request no 'request' listener is there for, and NodeHttpServer listens while its
 * layer is built, before the routes' layers are; in a cluster the primary deals a worker connections from the moment
 * it listens, so a restarted worker would otherwise lose the first requests it is given, their clients left waiting.
 * A server closed before any app came (stopped while starting) answers what it held with 503.
 *
 * The other end too: on shutdown NodeHttpServer detaches the app before it closes the port, and a request that
 * arrives in between had no listener, so it was never answered and server.close() waited for its client to give up
 * (SIGTERM under load held the process until the client's timeout). Once the app is gone, such a request gets a 503
 * with `Connection: close`: a whole answer a client retries elsewhere.
 */
export const holdEarlyRequests = (server: Server): Server => {
  let held: Array<readonly [IncomingMessage, ServerResponse]> = []
  const hold = (request: IncomingMessage, response: ServerResponse) => void held.push([request, response])
  const release = (event: string | symbol) => {
    if (event !== "request") return
    server.off("newListener", release)
    server.off("request", hold)
    server.on("removeListener", detached)
    const waiting = held
    held = []
    // 'newListener' comes just before the app's listener is added.
    process.nextTick(() => waiting.forEach(([request, response]) => server.emit("request", request, response)))
  }
  const stopping = (_request: IncomingMessage, response: ServerResponse) =>
    void response.writeHead(503, { connection: "close" }).end()
  const detached = (event: string | symbol) => {
    if (event !== "request" || server.listenerCount("request") > 0) return
    server.off("removeListener", detached)
    server.on("request", stopping)
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
