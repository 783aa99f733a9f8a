import { connect } from "node:http2"

/** What an HTTP/2 request got back: status, headers, trailers (gRPC's status travels there) and the body. */
export interface Http2Answer {
  readonly status: number
  readonly headers: Record<string, unknown>
  readonly trailers: Record<string, unknown>
  readonly body: Buffer
}

/**
 * One HTTP/2 POST on a session of its own, with the headers exactly as given: what a server answers a client no
 * library stands between (no deadline, compression or header clean-up of a client's own).
 */
export const http2Post = (origin: string, path: string, headers: Record<string, string>, body?: Uint8Array | string): Promise<Http2Answer> =>
  new Promise<Http2Answer>((resolve, reject) => {
    const session = connect(origin)
    session.on("error", reject)
    const stream = session.request({ ":method": "POST", ":path": path, ...headers })
    let status = 0
    let responseHeaders: Record<string, unknown> = {}
    let trailers: Record<string, unknown> = {}
    const chunks: Array<Buffer> = []
    stream.on("response", (h) => {
      status = Number(h[":status"])
      responseHeaders = h
    })
    stream.on("trailers", (t) => void (trailers = t))
    stream.on("data", (chunk: Buffer) => chunks.push(chunk))
    stream.on("end", () => {
      session.close()
      resolve({ status, headers: responseHeaders, trailers, body: Buffer.concat(chunks) })
    })
    stream.on("error", reject)
    stream.end(body)
  })
