import { IncomingMessage, type Server, type ServerResponse } from "node:http"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

/** A whole answer a hot route gives: written as it is, in one writeHead and end. */
export interface HotAnswer {
  readonly status: number
  /** In the order the platform would write them (see HttpEdge for the headers the edge adds). */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A request a route read the body of and then handed back: the app gets this copy, body and all. */
export interface HandBack {
  readonly handBack: IncomingMessage
}

/** What a route's program ends in: an answer, or the request for the app after all (undefined: as it came). */
export type HotOutcome = HotAnswer | HandBack | undefined

/**
 * A route answered beside the platform's router. Given a request, undefined (synchronously) when the route does not
 * take it; else a program that answers it, or hands it to the app after all (any error, for one: the app answers
 * it in its envelope, as it answers every other request). So a program must not change anything before it is sure
 * it answers. A program that read the body hands back a copy that holds it (replayedRequest).
 */
export type HotRoute = (request: IncomingMessage) => Effect.Effect<HotOutcome> | undefined

export const isHotAnswer = (outcome: HotOutcome): outcome is HotAnswer => outcome !== undefined && "status" in outcome

/**
 * A copy of `request` whose body is `body`, for the app once the original's body was read: what the app reads of a
 * request (method, URL, headers, socket, body stream) is the same.
 */
export const replayedRequest = (request: IncomingMessage, body: string): IncomingMessage => {
  const copy = new IncomingMessage(request.socket)
  copy.method = request.method!
  copy.url = request.url!
  copy.headers = request.headers
  copy.rawHeaders = request.rawHeaders
  copy.httpVersion = request.httpVersion
  copy.httpVersionMajor = request.httpVersionMajor
  copy.httpVersionMinor = request.httpVersionMinor
  copy.push(Buffer.from(body, "utf8"))
  copy.push(null)
  copy.complete = true
  return copy
}

/**
 * Puts `route` in front of the app `server` hands its requests to (its 'request' event): a request the route takes
 * runs as one fiber of `run` and is answered with the route's answer; every other request, and every one the route
 * hands back, goes to the app as if the lane were not there. Removed when the scope closes, before the app is.
 *
 * Why: on GET /user the platform's request wrapper, router, schema and middleware fibers cost about as much CPU as
 * everything the request does (plan issue 30, H4); a route that needs none of them can skip them.
 */
export const installHotLane = (
  server: Server,
  route: HotRoute,
  run: (program: Effect.Effect<HotOutcome>) => Fiber.RuntimeFiber<HotOutcome>
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const target = server as unknown as { emit: Emit }
      const emit = target.emit
      const toApp = (request: IncomingMessage, response: ServerResponse) => emit.call(server, "request", request, response)
      target.emit = function(this: Server, event: string | symbol, ...args: Array<any>): boolean {
        if (event !== "request") return emit.apply(this, [event, ...args])
        const [request, response] = args as [IncomingMessage, ServerResponse]
        const program = route(request)
        if (program === undefined) return emit.apply(this, [event, ...args])
        run(program).addObserver((exit: Exit.Exit<HotOutcome>) => {
          const outcome = Exit.isSuccess(exit) ? exit.value : undefined
          if (!isHotAnswer(outcome)) return void toApp(outcome?.handBack ?? request, response)
          if (!response.writableEnded) response.writeHead(outcome.status, outcome.headers).end(outcome.body)
        })
        return true
      }
      return emit
    }),
    (emit) => Effect.sync(() => void ((server as unknown as { emit: Emit }).emit = emit))
  )

type Emit = (event: string | symbol, ...args: Array<any>) => boolean
