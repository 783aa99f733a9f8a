import { describe, expect, it } from "@effect/vitest"
import { compressionNegotiate } from "@connectrpc/connect/protocol"
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node"
import { FastCheck as fc } from "effect"
import { isPlainGrpcCall, negotiatedResponseEncoding, unaryPayload } from "../../src/iam/grpc/PlainGrpcCall.js"

const frame = (flags: number, message: Uint8Array): Uint8Array => {
  const out = new Uint8Array(5 + message.length)
  out[0] = flags
  new DataView(out.buffer).setUint32(1, message.length)
  out.set(message, 5)
  return out
}

describe("the calls the ValidateToken lane takes", () => {
  const plain = { "content-type": "application/grpc", te: "trailers" }
  it("takes a plain gRPC POST over HTTP/2, with or without +proto and identity encoding", () => {
    expect(isPlainGrpcCall("POST", "2.0", plain)).toBe(true)
    expect(isPlainGrpcCall("POST", "2.0", { ...plain, "content-type": "application/grpc+proto" })).toBe(true)
    expect(isPlainGrpcCall("POST", "2.0", { ...plain, "grpc-encoding": "identity", authorization: "Bearer x" })).toBe(true)
  })
  it("leaves everything connect would answer differently to connect", () => {
    expect(isPlainGrpcCall("GET", "2.0", plain)).toBe(false)
    expect(isPlainGrpcCall("POST", "1.1", plain)).toBe(false)
    for (const contentType of ["application/grpc+json", "application/grpc-web", "application/grpc-web-text", "application/proto", "application/grpc; charset=utf-8", "APPLICATION/GRPC"]) {
      expect(isPlainGrpcCall("POST", "2.0", { ...plain, "content-type": contentType }), contentType).toBe(false)
    }
    expect(isPlainGrpcCall("POST", "2.0", { te: "trailers" })).toBe(false)
    expect(isPlainGrpcCall("POST", "2.0", { ...plain, "grpc-encoding": "gzip" })).toBe(false)
    expect(isPlainGrpcCall("POST", "2.0", { ...plain, "grpc-timeout": "1S" })).toBe(false)
    expect(isPlainGrpcCall("POST", "2.0", { ...plain, origin: "http://app.example" })).toBe(false)
  })

  it.prop("reads back exactly the message of one uncompressed frame within the limit", [fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 400 })], ([message, limit]) => {
    const read = unaryPayload(frame(0, message), limit)
    if (message.length > limit) expect(read).toBeUndefined()
    else expect(read && Buffer.from(read).equals(Buffer.from(message))).toBe(true)
  })
  it.prop("takes no compressed frame, no truncated or padded body, no second frame", [fc.uint8Array({ maxLength: 100 }), fc.integer({ min: 1, max: 255 })], ([message, flags]) => {
    const body = frame(0, message)
    expect(unaryPayload(frame(flags, message), 1000)).toBeUndefined()
    expect(unaryPayload(body.subarray(0, body.length - 1), 1000)).toBeUndefined()
    expect(unaryPayload(new Uint8Array([...body, 0]), 1000)).toBeUndefined()
    expect(unaryPayload(new Uint8Array([...body, ...body]), 1000)).toBeUndefined()
  })
  it.prop("any body: a message only when connect would read one message of that length", [fc.uint8Array({ maxLength: 40 })], ([body]) => {
    const read = unaryPayload(body, 1000)
    if (read !== undefined) expect(body[0] === 0 && new DataView(body.buffer, body.byteOffset).getUint32(1) === body.length - 5).toBe(true)
  })

  const names = fc.constantFrom("gzip", "br", "identity", "deflate", "zstd", " gzip", "br ", "")
  it.prop("picks the response compression as connect's compressionNegotiate does", [fc.option(fc.array(names, { maxLength: 4 }), { nil: undefined })], ([accepted]) => {
    const header = accepted === undefined ? undefined : accepted.join(",")
    const connect = compressionNegotiate([compressionGzip, compressionBrotli], null, header ?? null, "grpc-accept-encoding")
    expect(negotiatedResponseEncoding(["gzip", "br"], header)).toBe(connect.response?.name)
  })
})
