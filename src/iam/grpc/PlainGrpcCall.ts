/**
 * Which calls the ValidateToken lane (ValidateTokenLane.ts) may answer itself: the rules, apart from any socket.
 * Everything the lane does not take goes to connect, which answers it as it always did.
 */

/** A request's headers as node:http2 gives them (lower-case names; a repeated field as an array). */
export type NodeHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

// The two content types connect's gRPC protocol answers with a binary message and does not echo back otherwise.
const PLAIN_CONTENT_TYPES: ReadonlySet<string> = new Set(["application/grpc", "application/grpc+proto"])

/**
 * A plain unary gRPC call the lane can answer byte for byte as connect would: POST over HTTP/2 with the binary
 * gRPC content type, an uncompressed request (no grpc-encoding, or identity), no deadline (connect would time
 * the handler), and no Origin (a browser's call, answered with CORS headers, and gRPC-Web is another content type
 * anyway). Decided before the body is read.
 */
export const isPlainGrpcCall = (method: string, httpVersion: string, headers: NodeHeaders): boolean => {
  if (method !== "POST" || httpVersion !== "2.0") return false
  const contentType = headers["content-type"]
  if (typeof contentType !== "string" || !PLAIN_CONTENT_TYPES.has(contentType)) return false
  const encoding = headers["grpc-encoding"]
  if (encoding !== undefined && encoding !== "identity") return false
  return headers["grpc-timeout"] === undefined && headers["origin"] === undefined
}

/**
 * The message of a request body that is exactly one uncompressed gRPC frame (flag 0, 4-byte big-endian length,
 * then that many bytes) of at most `limitBytes`; undefined for anything else (no frame, a compressed one, a
 * length that does not match, two frames, one over the limit), which connect refuses in its own words.
 */
export const unaryPayload = (body: Uint8Array, limitBytes: number): Uint8Array | undefined => {
  if (body.length < 5 || body[0] !== 0) return undefined
  const length = ((body[1]! << 24) >>> 0) + (body[2]! << 16) + (body[3]! << 8) + body[4]!
  if (length !== body.length - 5 || length > limitBytes) return undefined
  return body.subarray(5)
}

/** The name of the compression connect answers with (grpc-encoding), or undefined: as compressionNegotiate picks it. */
export const negotiatedResponseEncoding = (
  available: ReadonlyArray<string>,
  acceptEncoding: string | ReadonlyArray<string> | undefined
): string | undefined => {
  // A repeated header field reaches connect as one value joined by ", " (node headers to web Headers).
  const accepted = Array.isArray(acceptEncoding) ? acceptEncoding.join(", ") : acceptEncoding as string | undefined
  // The request is uncompressed (isPlainGrpcCall), so without an accept list the answer is uncompressed too.
  if (accepted === undefined || accepted === "") return undefined
  for (const name of accepted.split(",").map((n) => n.trim())) {
    if (available.includes(name)) return name
  }
  return undefined
}
