import type { UniversalHandlerFn, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol"
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect"
import type { Code } from "@connectrpc/connect"
import { codeOfConnectName, connectCodeName, connectRefusalStatus, type Refusal, restateRefusal } from "./ConnectRefusals.js"
import { withGrpcWebTrailers } from "./GrpcWebTrailers.js"

/**
 * The gRPC spec percent-encodes grpc-message only where it must: '%' and bytes outside printable ASCII. connect-es
 * encodes like encodeURIComponent, ':' and ',' included, and @grpc/grpc-js decodes with decodeURI, which leaves
 * those escaped: "permission denied%3A …" would reach its clients. Re-encoded the spec's way, every decoder
 * (decodeURI, decodeURIComponent, grpc-go's) reads the message as it was written.
 */
const specEncoded = (text: string): string => {
  let encoded = ""
  for (const byte of Buffer.from(text, "utf8")) {
    encoded += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return encoded
}

const decodedMessage = (fields: Headers): string | undefined => {
  const message = fields.get("grpc-message")
  if (message === null) return undefined
  try {
    return decodeURIComponent(message)
  } catch {
    return undefined
  }
}

const readAll = async (body: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Array<Uint8Array> = []
  for await (const chunk of body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

const bodyOf = (bytes: Buffer): AsyncIterable<Uint8Array> => (async function*() {
  if (bytes.length > 0) yield bytes
})()

/**
 * A handler whose every status is as IAM states it (restateRefusal: protobuf that does not parse is INVALID_ARGUMENT,
 * not INTERNAL; a message over the size limit is RESOURCE_EXHAUSTED in the REST words), wherever the status travels:
 * gRPC's headers (a failure before any message) and HTTP/2 trailers, the trailer frame ending a gRPC-Web body (the
 * text mode's too, when grpcWebText wraps this handler), and a Connect unary error's JSON body and HTTP status. Every
 * grpc-message is spec-encoded. Bodies stream through as they are written (health Watch): only a Connect unary error,
 * a small JSON body, is read whole. `refused` hears of the call's failure status, once.
 */
export const withRestatedStatus = (
  handler: UniversalHandlerFn,
  limitBytes: number,
  refused: (refusal: Refusal) => void
) =>
async (request: UniversalServerRequest): Promise<UniversalServerResponse> => {
  let reported = false
  const report = (refusal: Refusal): void => {
    if (reported) return
    reported = true
    refused(refusal)
  }
  // One set of gRPC status fields (headers, trailers, a gRPC-Web trailer frame), restated in place.
  const fix = (fields: Headers): void => {
    const status = fields.get("grpc-status")
    const message = decodedMessage(fields)
    if (status === null || status === "0") {
      if (message !== undefined) fields.set("grpc-message", specEncoded(message))
      return
    }
    const refusal = restateRefusal({ code: Number(status) as Code, message: message ?? "" }, limitBytes)
    fields.set("grpc-status", String(refusal.code))
    fields.set("grpc-message", specEncoded(refusal.message))
    report(refusal)
  }

  const response = await handler(request)
  const { body, header, trailer } = response
  if (header === undefined) return response
  const contentType = header.get("content-type") ?? ""
  if (body !== undefined && response.status !== 200 && /^application\/json/i.test(contentType) && header.get("content-encoding") === null) {
    return restatedConnectError(response, await readAll(body), limitBytes, report)
  }
  fix(header)
  if (body === undefined) {
    if (trailer !== undefined) fix(trailer)
    return response
  }
  if (/^application\/grpc-web/i.test(contentType)) {
    header.delete("content-length")
    return { ...response, body: withGrpcWebTrailers(body, fix) }
  }
  if (trailer === undefined) return response
  return {
    ...response,
    body: (async function*() {
      yield* body
      fix(trailer)
    })()
  }
}

/**
 * A Connect unary error (`{"code":"internal","message":"parse binary: …"}` with HTTP 500) restated: the body's code and
 * message, and the HTTP status Connect gives the restated code (413 for a message over the size limit, as on REST).
 */
const restatedConnectError = (
  response: UniversalServerResponse,
  bytes: Buffer,
  limitBytes: number,
  report: (refusal: Refusal) => void
): UniversalServerResponse => {
  let error: { code?: unknown; message?: unknown } = {}
  try {
    error = JSON.parse(bytes.toString("utf8")) as typeof error
  } catch {
    // Not Connect's error body: passed on as it came.
  }
  const code = typeof error.code === "string" ? codeOfConnectName(error.code) : undefined
  if (code === undefined) return { ...response, body: bodyOf(bytes) }
  const found = { code, message: typeof error.message === "string" ? error.message : "" }
  const refusal = restateRefusal(found, limitBytes)
  report(refusal)
  if (refusal.code === found.code && refusal.message === found.message) return { ...response, body: bodyOf(bytes) }
  const out = Buffer.from(JSON.stringify({ ...error, code: connectCodeName(refusal.code), message: refusal.message }))
  response.header!.set("content-length", String(out.length))
  return {
    ...response,
    status: connectRefusalStatus(refusal, refusal.code === found.code ? response.status : codeToHttpStatus(refusal.code), limitBytes),
    body: bodyOf(out)
  }
}
