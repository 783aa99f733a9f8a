import type { UniversalServerResponse } from "@connectrpc/connect/protocol"

/** The refusal of a request whose protobuf bytes do not parse, on every protocol of the gRPC port. */
export const MALFORMED_PROTOBUF = "request message is not valid protobuf"

const PARSE_BINARY = "parse binary"
const TRAILER_FLAG = 0x80

const isParseFailure = (status: string | undefined, message: string | undefined): boolean => {
  if (status !== "13" || message === undefined) return false
  try {
    return decodeURIComponent(message).startsWith(PARSE_BINARY)
  } catch {
    return false
  }
}

/** A gRPC-Web trailer frame ("grpc-status: 13\r\ngrpc-message: parse binary…") as the client's INVALID_ARGUMENT. */
const fixTrailerFrame = (chunk: Uint8Array): Uint8Array => {
  if (chunk.length < 5 || (chunk[0]! & TRAILER_FLAG) === 0) return chunk
  const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  if (bytes.readUInt32BE(1) !== bytes.length - 5) return chunk
  const fields = new Map(bytes.subarray(5).toString("latin1").split("\r\n").filter((line) => line.includes(":")).map((line) => {
    const at = line.indexOf(":")
    return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()] as const
  }))
  if (!isParseFailure(fields.get("grpc-status"), fields.get("grpc-message"))) return chunk
  fields.set("grpc-status", "3")
  fields.set("grpc-message", encodeURIComponent(MALFORMED_PROTOBUF))
  const text = Buffer.from([...fields].map(([name, value]) => `${name}: ${value}\r\n`).join(""), "latin1")
  const head = Buffer.alloc(5)
  head[0] = chunk[0]!
  head.writeUInt32BE(text.length, 1)
  return Buffer.concat([head, text])
}

const readAll = async (body: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Array<Uint8Array> = []
  for await (const chunk of body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

/**
 * connect-es answers a request whose protobuf bytes do not parse with INTERNAL ("parse binary: …"), telling the
 * client the server is broken when it is the client's input that is: HTTP 500 over Connect, grpc-status 13 over
 * gRPC-Web. This makes both INVALID_ARGUMENT (Connect: 400 `invalid_argument`), as the gRPC port already does for
 * gRPC (whose status is in trailers it rewrites itself). Only answers that are that refusal are read; every other
 * body passes through untouched, chunk by chunk.
 */
export const malformedProtobufAsInvalidArgument = async (response: UniversalServerResponse): Promise<UniversalServerResponse> => {
  const { body, header } = response
  if (body === undefined || header === undefined) return response
  const contentType = header.get("content-type") ?? ""
  // Connect's unary error: a small JSON body, never compressed at that size.
  if (response.status === 500 && contentType.startsWith("application/json") && header.get("content-encoding") === null) {
    const bytes = await readAll(body)
    let error: { code?: unknown; message?: unknown } = {}
    try {
      error = JSON.parse(bytes.toString("utf8")) as typeof error
    } catch {
      // Not Connect's error body: passed on as it came.
    }
    const malformed = error.code === "internal" && typeof error.message === "string" && error.message.startsWith(PARSE_BINARY)
    const out = malformed ? Buffer.from(JSON.stringify({ code: "invalid_argument", message: MALFORMED_PROTOBUF })) : bytes
    header.set("content-length", String(out.length))
    return { ...response, status: malformed ? 400 : response.status, body: (async function*() { yield out })() }
  }
  if (contentType.startsWith("application/grpc-web") && !contentType.startsWith("application/grpc-web-text")) {
    return {
      ...response,
      body: (async function*() {
        for await (const chunk of body) yield fixTrailerFrame(chunk)
      })()
    }
  }
  return response
}
