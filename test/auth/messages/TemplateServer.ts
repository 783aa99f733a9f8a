import { createServer } from "node:http"
import { Effect, Queue, Ref, type Scope } from "effect"
import { listenScoped } from "../../platform/LocalServers.js"

/** What the template server answers: a status and a body, or nothing at all (to drive the fetch's timeout). */
export type TemplateAnswer = { readonly status: number; readonly body: string } | "hang"

/**
 * A real HTTP server on 127.0.0.1, port 0, serving an email template as an operator's would. The answer can be
 * changed between requests; every request's path is recorded before it is answered. Closed with the scope.
 */
export const startTemplateServer = (
  first: TemplateAnswer
): Effect.Effect<{
  readonly url: string
  readonly answer: Ref.Ref<TemplateAnswer>
  readonly requests: Queue.Dequeue<string>
}, never, Scope.Scope> =>
  Effect.gen(function*() {
    const answer = yield* Ref.make(first)
    const requests = yield* Queue.unbounded<string>()
    const server = createServer((req, res) => {
      Queue.unsafeOffer(requests, req.url ?? "")
      const reply = Effect.runSync(Ref.get(answer))
      if (reply === "hang") return
      res.writeHead(reply.status, { "content-type": "text/html; charset=utf-8" })
      res.end(reply.body)
    })
    const port = yield* listenScoped(server)
    return { url: `http://127.0.0.1:${port}/templates/confirmation.html`, answer, requests }
  })
