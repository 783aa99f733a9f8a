import { Code, ConnectError } from "@connectrpc/connect"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { binaryContentType, fromBase64, toBase64 } from "../../src/iam/grpc/GrpcWebText.js"

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
