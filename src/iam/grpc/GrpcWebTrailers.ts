/**
 * gRPC-Web carries its status in a trailer frame at the end of the body (frame flag 0x80, then header lines), not in
 * HTTP trailers. `withGrpcWebTrailers` hands that frame's fields to `fix` as Headers and writes back what it leaves,
 * so the gRPC port corrects a gRPC-Web status as it does a gRPC one. Other frames pass through as soon as they are
 * whole, so a server stream's messages are not held back; a compressed trailer frame (flag 0x01) is left as it is.
 */
export async function* withGrpcWebTrailers(
  body: AsyncIterable<Uint8Array>,
  fix: (trailers: Headers) => void
): AsyncIterable<Uint8Array> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of body) {
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk])
    const out: Array<Buffer> = []
    while (pending.length >= 5) {
      const end = 5 + pending.readUInt32BE(1)
      if (pending.length < end) break
      out.push(fixedFrame(pending.subarray(0, end), fix))
      pending = pending.subarray(end)
    }
    if (out.length > 0) yield Buffer.concat(out)
  }
  // A body that ends inside a frame is passed on as it came; the client reports it.
  if (pending.length > 0) yield pending
}

const TRAILER = 0x80
const COMPRESSED = 0x01

const fixedFrame = (frame: Buffer, fix: (trailers: Headers) => void): Buffer => {
  const flags = frame.readUInt8(0)
  if ((flags & TRAILER) === 0 || (flags & COMPRESSED) !== 0) return frame
  const trailers = new Headers()
  for (const line of frame.subarray(5).toString("utf8").split("\r\n")) {
    const colon = line.indexOf(":")
    if (colon > 0) trailers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  fix(trailers)
  let text = ""
  trailers.forEach((value, name) => {
    text += `${name}: ${value}\r\n`
  })
  const data = Buffer.from(text, "utf8")
  const head = Buffer.alloc(5)
  head.writeUInt8(flags, 0)
  head.writeUInt32BE(data.length, 1)
  return Buffer.concat([head, data])
}
