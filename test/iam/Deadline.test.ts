import { createServer, type Http2Server } from "node:http2"
import type { AddressInfo } from "node:net"
import { connectNodeAdapter } from "@connectrpc/connect-node"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type Context, Effect, Logger, LogLevel } from "effect"
import { runForConnect } from "../../src/iam/grpc/ConnectFailure.js"
import { iamConnectRoutes } from "../../src/iam/grpc/GrpcServer.js"
import { ServingStatus } from "../../src/iam/grpc/Health.js"
import type { IamHandlers } from "../../src/iam/IamHandlers.js"
import { http2Post } from "../support/Http2Call.js"

// A call whose deadline passes while its handler runs ends DEADLINE_EXCEEDED, not CANCELLED, over gRPC and Connect.
// The handlers never finish, so the deadline is sure to pass during the call; the routes, connect's deadline and
// runForConnect are the gRPC port's own.

const neverEnding = new Proxy({}, { get: () => () => Effect.never }) as unknown as Context.Tag.Service<IamHandlers>

let server: Http2Server
let origin: string

beforeAll(async () => {
  // The test servers log only errors: the access lines of these calls stay out of the test output.
  const run = runForConnect(Effect.runSync(Effect.runtime<never>().pipe(Logger.withMinimumLogLevel(LogLevel.Error))))
  server = createServer(connectNodeAdapter({
    routes: iamConnectRoutes(neverEnding, run, async () => ServingStatus.SERVING, undefined),
    grpc: true,
    connect: true
  }))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

/** One h2 request with the deadline as a header and no deadline of the client's own: what the server answers. */
const h2Call = (headers: Record<string, string>, body: Uint8Array) =>
  http2Post(origin, "/gatehouse.iam.v1.AuthService/ValidateToken", headers, body)

describe("a call past its deadline", () => {
  it("is DEADLINE_EXCEEDED over gRPC (grpc-timeout)", async () => {
    const answer = await h2Call(
      { "content-type": "application/grpc", te: "trailers", "grpc-timeout": "50m" },
      new Uint8Array([0, 0, 0, 0, 0])
    )
    expect(answer.status).toBe(200)
    const grpcStatus = answer.trailers["grpc-status"] ?? answer.headers["grpc-status"]
    expect(grpcStatus).toBe("4")
  })

  it("is deadline_exceeded over Connect (connect-timeout-ms)", async () => {
    const answer = await h2Call(
      { "content-type": "application/json", "connect-protocol-version": "1", "connect-timeout-ms": "50" },
      new TextEncoder().encode("{}")
    )
    expect(JSON.parse(answer.body.toString())).toMatchObject({ code: "deadline_exceeded" })
  })
})
