/** gRPC's length-prefixed message: a compressed flag (always 0 here), a big-endian uint32 length, the bytes. */
export const frame = (message: Uint8Array): Buffer => {
  const out = Buffer.allocUnsafe(5 + message.length)
  out[0] = 0
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}

/** The one uncompressed message of a unary request or answer; throws on anything else. */
export const unframe = (body: Buffer): Buffer => {
  if (body.length < 5 || body[0] !== 0) throw new Error("expected one uncompressed gRPC message")
  const length = body.readUInt32BE(1)
  if (body.length !== 5 + length) throw new Error("gRPC message length does not match the body")
  return body.subarray(5)
}
