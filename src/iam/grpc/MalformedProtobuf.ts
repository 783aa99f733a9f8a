import type { UniversalServerResponse } from "@connectrpc/connect/protocol"

/** The refusal of a request whose protobuf bytes do not parse, on every protocol of the gRPC port. */
export const MALFORMED_PROTOBUF = "request message is not valid protobuf"

const PARSE_BINARY = "parse binary"

const readAll = async (body: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Array<Uint8Array> = []
  for await (const chunk of body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

/**
 * connect-es answers a request whose protobuf bytes do not parse with INTERNAL ("parse binary: …"), telling the
 * client the server is broken when it is the client's input that is: over Connect, HTTP 500 with a JSON body. This
 * makes it 400 `invalid_argument`, as the gRPC port's status fix does for gRPC and gRPC-Web (whose status travels in
 * trailers and trailer frames). Only an answer that is that refusal is read; every other body passes through
 * untouched.
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
  return response
}
