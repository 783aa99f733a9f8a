import { Code, ConnectError } from "@connectrpc/connect"
import type { UniversalHandlerFn, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol"

/**
 * gRPC-Web's text mode (`application/grpc-web-text`, the official grpc-web client's default, for browsers that
 * cannot stream binary responses) is the binary protocol with both bodies in base64. connect-es speaks only the
 * binary one and answers the text one 415, so the gRPC port translates: the request body is decoded and handed on
 * as `application/grpc-web+proto` (or `+json`), and the answer's bytes are encoded back under the text type.
 */
export const grpcWebText = (handler: UniversalHandlerFn) =>
async (request: UniversalServerRequest): Promise<UniversalServerResponse> => {
  const binaryType = binaryContentType(request.header.get("content-type"))
  if (binaryType === undefined || !isByteStream(request.body)) return handler(request)
  const header = new Headers(request.header)
  header.set("content-type", binaryType)
  const response = await handler({ ...request, header, body: fromBase64(request.body) })
  const type = response.header?.get("content-type")
  if (response.header === undefined || type === null || type === undefined || !/^application\/grpc-web\b/i.test(type)) {
    return response
  }
  const textHeader = new Headers(response.header)
  textHeader.set("content-type", type.replace(/^application\/grpc-web/i, "application/grpc-web-text"))
  return { ...response, header: textHeader, ...(response.body === undefined ? {} : { body: toBase64(response.body) }) }
}

// The text types as the gRPC-Web specification and connect's own matcher spell them (no suffix means protobuf).
const TEXT_TYPE = /^application\/grpc-web-text(?:\+(proto|json))?\s*(?:;.*)?$/i

/** The binary type a text request's body becomes, or undefined when the request is not gRPC-Web text. */
export const binaryContentType = (contentType: string | null | undefined): string | undefined => {
  const match = contentType === null || contentType === undefined ? null : TEXT_TYPE.exec(contentType)
  if (match === null) return undefined
  return match[1]?.toLowerCase() === "json" ? "application/grpc-web+json" : "application/grpc-web+proto"
}

const isByteStream = (body: UniversalServerRequest["body"]): body is AsyncIterable<Uint8Array> =>
  typeof body === "object" && body !== null && Symbol.asyncIterator in body

const notBase64 = () => new ConnectError("request body is not valid base64", Code.InvalidArgument)

// Whole quanta, each either four characters or padded; padding may end any quantum, because a sender may encode
// each of its writes on its own (the official client sends one, proxies such as Envoy one per message).
const QUANTA = /^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)*$/

const decodeQuanta = (text: string): Buffer => {
  if (!QUANTA.test(text)) throw notBase64()
  // Buffer's decoder stops at the first padding, so each padded run is decoded on its own.
  return Buffer.concat(text.split(/(?<==)(?=[^=])/).map((run) => Buffer.from(run, "base64")))
}

/**
 * A base64 request body as bytes, decoded as it arrives: whole quanta at a time, so a quantum split between two
 * chunks is kept until its end comes. Line breaks are tolerated; anything else that is not base64 is
 * INVALID_ARGUMENT, which connect reports as the call's status.
 */
export async function* fromBase64(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  let pending = ""
  for await (const chunk of chunks) {
    pending += Buffer.from(chunk).toString("latin1").replace(/[\r\n]/g, "")
    const whole = pending.length - (pending.length % 4)
    if (whole === 0) continue
    const bytes = decodeQuanta(pending.slice(0, whole))
    pending = pending.slice(whole)
    if (bytes.length > 0) yield bytes
  }
  if (pending.length === 0) return
  // An unpadded last quantum (two or three characters) is read as if padded; one character cannot be base64.
  if (pending.length === 1) throw notBase64()
  yield decodeQuanta(pending + "=".repeat(4 - pending.length))
}

/**
 * Response bytes as base64, each chunk encoded on its own (padded), so every message and the trailers reach the
 * client as soon as they are written: holding back the last bytes of a chunk until the next one would stall a
 * server stream (health Watch) mid-message. Clients decode padded runs one after the other, as the specification
 * asks of them.
 */
export async function* toBase64(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of chunks) {
    if (chunk.length > 0) yield Buffer.from(Buffer.from(chunk).toString("base64"), "latin1")
  }
}
