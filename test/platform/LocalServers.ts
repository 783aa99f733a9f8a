import { Effect, Queue, type Scope } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { type AddressInfo, createServer as createTcpServer } from "node:net"

/** One request exactly as the stub received it. */
export interface RecordedRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/**
 * What the stub answers: a JSON body with a status, a body of any other type (a proxy's error page), or nothing at
 * all (to drive the caller's timeout).
 */
export type StubAnswer =
  | { readonly status: number; readonly json: unknown }
  | { readonly status: number; readonly text: string; readonly contentType: string }
  | "hang"

/**
 * A real HTTP server on 127.0.0.1, port 0, standing in for a provider's API (SMS, captcha). Every request is recorded
 * (after its body has arrived) before it is answered; the server and any held connections are closed with the scope.
 */
export const startHttpStub = (
  answer: (request: RecordedRequest) => StubAnswer
): Effect.Effect<{ readonly baseUrl: string; readonly requests: Queue.Dequeue<RecordedRequest> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const requests = yield* Queue.unbounded<RecordedRequest>()
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const recorded: RecordedRequest = {
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8")
        }
        Queue.unsafeOffer(requests, recorded)
        const reply = answer(recorded)
        if (reply === "hang") return
        if ("text" in reply) {
          res.writeHead(reply.status, { "content-type": reply.contentType })
          res.end(reply.text)
          return
        }
        res.writeHead(reply.status, { "content-type": "application/json" })
        res.end(JSON.stringify(reply.json))
      })
    })
    const port = yield* listenScoped(server)
    return { baseUrl: `http://127.0.0.1:${port}`, requests }
  })

/** Listens on 127.0.0.1 and a free port; the server and any held connections are closed with the scope. */
export const listenScoped = (server: Server): Effect.Effect<number, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** The form fields of a urlencoded body, in order. */
export const formFields = (body: string): Array<[string, string]> => [...new URLSearchParams(body)]

/** A port on 127.0.0.1 that nothing listens on, for connection-refused tests: bind one, then let it go. */
export const unusedPort: Effect.Effect<number> = Effect.async<number>((resume) => {
  const probe = createTcpServer()
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})
