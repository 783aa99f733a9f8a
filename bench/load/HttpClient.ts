import { Agent, request } from "node:http"

export interface HttpTarget {
  readonly host: string
  readonly port: number
}

export interface HttpCall {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  /** JSON, sent as application/json. */
  readonly json?: unknown
}

/** Keep-alive sockets, one per concurrent loop, so the load measures requests and not TCP handshakes. */
export const keepAliveAgent = (connections: number): Agent => new Agent({ keepAlive: true, maxSockets: connections })

// Bounds a request to a server that stopped answering, so a load run always ends.
const TIMEOUT_MS = 30_000

/** One request's answer, whatever its status. */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: Buffer
}

/** One request; resolves with the answer, whatever its status, and rejects only when there is none. */
export const httpAnswer = (target: HttpTarget, agent: Agent, call: HttpCall): Promise<HttpAnswer> =>
  new Promise((resolve, reject) => {
    const body = call.json === undefined ? undefined : Buffer.from(JSON.stringify(call.json))
    const req = request({
      host: target.host,
      port: target.port,
      method: call.method,
      path: call.path,
      agent,
      timeout: TIMEOUT_MS,
      headers: {
        ...call.headers,
        ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(body.length) })
      }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on("timeout", () => req.destroy(new Error(`timeout after ${TIMEOUT_MS} ms: ${call.method} ${call.path}`)))
    req.on("error", reject)
    req.end(body)
  })

/** One request; resolves with the body of a 2xx answer and rejects on anything else. */
export const httpCall = async (target: HttpTarget, agent: Agent, call: HttpCall): Promise<Buffer> => {
  const answer = await httpAnswer(target, agent, call)
  if (answer.status >= 200 && answer.status < 300) return answer.body
  throw new Error(`HTTP ${answer.status} ${call.method} ${call.path}: ${answer.body.toString("utf8").slice(0, 200)}`)
}

/** httpCall, then the answer parsed as JSON. */
export const httpJson = async <A = any>(target: HttpTarget, agent: Agent, call: HttpCall): Promise<A> =>
  JSON.parse((await httpCall(target, agent, call)).toString("utf8")) as A
