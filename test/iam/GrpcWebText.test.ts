import { Code, ConnectError } from "@connectrpc/connect"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { binaryContentType, fromBase64, toBase64 } from "../../src/iam/grpc/GrpcWebText.js"
import { withGrpcWebTrailers } from "../../src/iam/grpc/GrpcWebTrailers.js"

async function* chunksOf(parts: ReadonlyArray<Uint8Array>): AsyncIterable<Uint8Array> {
  yield* parts
}

const collect = async (chunks: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const parts: Array<Uint8Array> = []
  for await (const chunk of chunks) parts.push(chunk)
  return Buffer.concat(parts)
}

/** `text` cut at the given places (taken modulo its length), as the network may deliver it. */
const cut = (text: string, at: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(at.map((n) => (text.length === 0 ? 0 : n % (text.length + 1))))].sort((a, b) => a - b)
  const pieces: Array<Uint8Array> = []
  let from = 0
  for (const point of [...points, text.length]) {
    pieces.push(Buffer.from(text.slice(from, point), "latin1"))
    from = point
  }
  return pieces
}

const messages = fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 })
const cuts = fc.array(fc.nat(), { maxLength: 8 })

describe("gRPC-Web text", () => {
  it("a body encoded in one or in separately padded parts, however it is cut in transit, decodes to its bytes", () =>
    fc.assert(fc.asyncProperty(messages, cuts, async (parts, at) => {
      const text = parts.map((part) => Buffer.from(part).toString("base64")).join("")
      const decoded = await collect(fromBase64(chunksOf(cut(text, at))))
      expect(decoded).toEqual(Buffer.concat(parts))
    })))

  it("an unpadded last quantum is read as if padded", async () => {
    expect(await collect(fromBase64(chunksOf([Buffer.from("AAEC"), Buffer.from("Aw")])))).toEqual(Buffer.from([0, 1, 2, 3]))
  })

  it("anything but base64 (line breaks aside), wherever it comes, is INVALID_ARGUMENT", () =>
    fc.assert(fc.asyncProperty(
      fc.uint8Array({ maxLength: 30 }),
      fc.constantFrom("*", "-", "_", " ", "\t", "!", "\u00e9", "\u0000"),
      fc.nat(),
      fc.uint8Array({ maxLength: 30 }),
      cuts,
      async (before, bad, position, after, at) => {
        const valid = Buffer.from(before).toString("base64") + Buffer.from(after).toString("base64")
        const where = position % (valid.length + 1)
        const text = valid.slice(0, where) + bad + valid.slice(where)
        const error = await collect(fromBase64(chunksOf(cut(text, at)))).then(() => undefined, (e: unknown) => e)
        expect(error).toBeInstanceOf(ConnectError)
        expect((error as ConnectError).code).toBe(Code.InvalidArgument)
        expect((error as ConnectError).rawMessage).toBe("request body is not valid base64")
      }
    )))

  it("a body that cannot be base64 at all is refused", async () => {
    for (const body of ["AAAA*AAA", "AAAAA", "AA=A", "A===", "\u00e9\u00e9\u00e9\u00e9"]) {
      const error = await collect(fromBase64(chunksOf([Buffer.from(body, "utf8")]))).then(() => undefined, (e: unknown) => e)
      expect(error, body).toBeInstanceOf(ConnectError)
      expect((error as ConnectError).code, body).toBe(Code.InvalidArgument)
    }
    expect(await collect(fromBase64(chunksOf([Buffer.from("AAEC\r\nAw==\n")])))).toEqual(Buffer.from([0, 1, 2, 3]))
  })

  it("an answer is encoded chunk by chunk, each chunk base64 of its own, together its bytes", () =>
    fc.assert(fc.asyncProperty(messages, async (parts) => {
      const encoded: Array<string> = []
      for await (const chunk of toBase64(chunksOf(parts))) encoded.push(Buffer.from(chunk).toString("latin1"))
      expect(encoded).toEqual(parts.filter((part) => part.length > 0).map((part) => Buffer.from(part).toString("base64")))
      expect(await collect(fromBase64(chunksOf(encoded.map((text) => Buffer.from(text, "latin1")))))).toEqual(Buffer.concat(parts))
    })))

  it("the text types become their binary twins; anything else is left alone", () => {
    expect(binaryContentType("application/grpc-web-text")).toBe("application/grpc-web+proto")
    expect(binaryContentType("application/grpc-web-text+proto")).toBe("application/grpc-web+proto")
    expect(binaryContentType("Application/GRPC-Web-Text+JSON")).toBe("application/grpc-web+json")
    expect(binaryContentType("application/grpc-web-text+json; charset=utf-8")).toBe("application/grpc-web+json")
    for (const other of [null, undefined, "", "application/grpc-web", "application/grpc-web+proto", "application/json", "application/grpc-web-textual"]) {
      expect(binaryContentType(other), String(other)).toBeUndefined()
    }
  })
})

const frameOf = (flags: number, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(5)
  head.writeUInt8(flags, 0)
  head.writeUInt32BE(data.length, 1)
  return Buffer.concat([head, data])
}

describe("gRPC-Web trailer frames", () => {
  const trailer = (fields: string) => frameOf(0x80, Buffer.from(fields, "utf8"))
  const upperCaseMessage = (trailers: Headers) => trailers.set("grpc-message", (trailers.get("grpc-message") ?? "").toUpperCase())

  it("however the body is cut, messages pass unchanged and the trailer frame is rewritten by the fix", () =>
    fc.assert(fc.asyncProperty(messages, cuts, async (parts, at) => {
      const body = Buffer.concat([...parts.map((part) => frameOf(0, part)), trailer("grpc-status: 13\r\ngrpc-message: broken\r\n")])
      const out = await collect(withGrpcWebTrailers(chunksOf(cut(body.toString("latin1"), at)), upperCaseMessage))
      expect(out).toEqual(Buffer.concat([...parts.map((part) => frameOf(0, part)), trailer("grpc-message: BROKEN\r\ngrpc-status: 13\r\n")]))
    })))

  it("each message is passed on as soon as it is whole, before the stream goes on", async () => {
    const seen: Array<number> = []
    async function* stream(): AsyncIterable<Uint8Array> {
      yield frameOf(0, Buffer.from([1, 2, 3]))
      seen.push(seen.length)
      yield trailer("grpc-status: 0\r\n")
    }
    const iterator = withGrpcWebTrailers(stream(), () => {})[Symbol.asyncIterator]()
    const first = await iterator.next()
    expect(first.value).toEqual(frameOf(0, Buffer.from([1, 2, 3])))
    expect(seen).toEqual([])
  })

  it("a compressed trailer frame and a body cut short are passed on as they came", async () => {
    const compressed = frameOf(0x81, Buffer.from([9, 9, 9]))
    expect(await collect(withGrpcWebTrailers(chunksOf([compressed]), upperCaseMessage))).toEqual(compressed)
    const short = frameOf(0, Buffer.from([1, 2, 3])).subarray(0, 6)
    expect(await collect(withGrpcWebTrailers(chunksOf([short]), upperCaseMessage))).toEqual(short)
  })
})
