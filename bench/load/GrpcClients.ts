import { connect, constants, type ClientHttp2Session } from "node:http2"
import { frame, unframe } from "../GrpcFrame.js"

const TIMEOUT_MS = 30_000

/**
 * Unary gRPC calls on bare node:http2 sessions. @grpc/grpc-js costs its caller about a millisecond of CPU a call,
 * as much as the servers spend answering, and on a two-core machine the load generator's CPU is taken from them;
 * this client costs a fraction of that. Several sessions, because one HTTP/2 connection reaches only one
 * node:cluster worker.
 */
export class GrpcClients {
  private readonly sessions: ReadonlyArray<ClientHttp2Session>

  constructor(address: string, channels: number) {
    this.sessions = Array.from({ length: channels }, () => {
      const session = connect(`http://${address}`)
      session.on("error", () => undefined) // each pending call fails on its own stream
      return session
    })
  }

  /** Resolves with the answer's message bytes on grpc-status 0; rejects with the status otherwise. */
  call(slot: number, path: string, request: Uint8Array): Promise<Buffer> {
    const session = this.sessions[slot % this.sessions.length]!
    return new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc+proto",
        te: "trailers"
      })
      const chunks: Array<Buffer> = []
      let status: string | undefined
      let message = ""
      const read = (headers: Record<string, unknown>) => {
        if (headers["grpc-status"] !== undefined) status = String(headers["grpc-status"])
        if (headers["grpc-message"] !== undefined) message = decodeURIComponent(String(headers["grpc-message"]))
      }
      stream.on("response", read) // a trailers-only answer carries its status here
      stream.on("trailers", read)
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("error", reject)
      stream.setTimeout(TIMEOUT_MS, () => stream.close(constants.NGHTTP2_CANCEL))
      stream.on("close", () => {
        if (status !== "0") return reject(new Error(`gRPC status ${status ?? "missing"} ${path}: ${message}`))
        try {
          resolve(unframe(Buffer.concat(chunks)))
        } catch (error) {
          reject(error)
        }
      })
      stream.end(frame(request))
    })
  }

  close(): void {
    this.sessions.forEach((session) => session.close())
  }
}
