import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Effect, Exit, type Fiber, type Scope } from "effect"

/** A whole answer a hot route gives: written as it is, in one writeHead and end. */
export interface HotAnswer {
  readonly status: number
  /** In the order the platform would write them (see HttpEdge for the headers the edge adds). */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * A route answered beside the platform's router. Given a request, undefined (synchronously) when the route does not
 * take it; else a program that answers it, or yields undefined to hand it to the app after all (any error, for
 * one: the app answers it in its envelope, as it answers every other request). So a program must not change
 * anything before it is sure it answers.
 */
export type HotRoute = (request: IncomingMessage) => Effect.Effect<HotAnswer | undefined> | undefined

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
  run: (program: Effect.Effect<HotAnswer | undefined>) => Fiber.RuntimeFiber<HotAnswer | undefined>
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
        run(program).addObserver((exit: Exit.Exit<HotAnswer | undefined>) => {
          const answer = Exit.isSuccess(exit) ? exit.value : undefined
          if (answer === undefined) return void toApp(request, response)
          if (!response.writableEnded) response.writeHead(answer.status, answer.headers).end(answer.body)
        })
        return true
      }
      return emit
    }),
    (emit) => Effect.sync(() => void ((server as unknown as { emit: Emit }).emit = emit))
  )

type Emit = (event: string | symbol, ...args: Array<any>) => boolean
