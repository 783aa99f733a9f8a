/**
 * Bad input on the gRPC port, generated from the proto: every IAM method gets random bytes, fields of its request
 * message sent with the wrong wire type, truncated lengths, garbage bearer tokens and messages over the size
 * limit. Every answer must be a gRPC status the service means (never INTERNAL, UNKNOWN or UNIMPLEMENTED), and the
 * server must still answer health checks afterwards.
 */
import type { DescField, DescMethod } from "@bufbuild/protobuf"
import { expect, layer } from "@effect/vitest"
import * as grpc from "@grpc/grpc-js"
import { Effect, FastCheck as fc } from "effect"
import { IAM_SERVICES } from "../../src/iam/IamContract.js"
import { grpcClients } from "../iam/support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "../iam/support/IamTestServer.js"
import { recordFigure, reliabilityScale } from "./Figures.js"

const RUNS_PER_METHOD = 40 * reliabilityScale
const SEED = 20_261_124

const varint = (n: number): Array<number> => {
  const bytes: Array<number> = []
  let value = n
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80)
    value = Math.floor(value / 128)
  }
  bytes.push(value)
  return bytes
}

// Wire type 2 (length-delimited) carries strings, bytes, messages and packed repeats; 0 carries varints.
const lengthDelimited = (field: DescField): boolean =>
  field.fieldKind === "message" || field.fieldKind === "list" || field.fieldKind === "map" ||
  (field.fieldKind === "scalar" && (field.scalar === 9 || field.scalar === 12))

/** A field of the method's request sent with the other wire type, or with a length that runs past the end. */
const wrongField = (method: DescMethod): fc.Arbitrary<Buffer> => {
  const fields = method.input.fields
  if (fields.length === 0) return fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes))
  return fc.tuple(fc.constantFrom(...fields), fc.nat({ max: 1_000_000 }), fc.uint8Array({ maxLength: 32 }), fc.boolean()).map(
    ([field, n, bytes, truncate]) => {
      const tag = (wire: number) => varint(field.number * 8 + wire)
      if (truncate) return Buffer.from([...tag(2), ...varint(bytes.length + 1 + n), ...bytes])
      return Buffer.from(lengthDelimited(field) ? [...tag(0), ...varint(n)] : [...tag(2), ...varint(bytes.length), ...bytes])
    }
  )
}

const probeFor = (method: DescMethod) =>
  fc.record({
    body: fc.oneof(fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)), wrongField(method)),
    authorization: fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 64 }).map((s) => `Bearer ${s.replace(/[^\x20-\x7e]/g, "x")}`),
      fc.constant("Bearer v4.public.not-a-token"),
      fc.constant("Basic Zm9vOmJhcg==")
    )
  })

// What a client's bad input may get: its own fault, or a refusal of who it is. Never the server's.
const SERVER_FAULTS = new Set(["INTERNAL", "UNKNOWN", "UNIMPLEMENTED", "DATA_LOSS"])

layer(IamTestServer(), { timeout: 300_000 })("gRPC bad input", (it) => {
  it.effect(`every IAM method answers ${RUNS_PER_METHOD} malformed requests with a client status, and the server stays up`, () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const client = new grpc.Client(address, grpc.credentials.createInsecure())
      const raw = (path: string, body: Buffer, authorization: string | undefined) =>
        Effect.promise(() => new Promise<string>((resolve) => {
          const metadata = new grpc.Metadata()
          if (authorization !== undefined) metadata.set("authorization", authorization)
          client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, body, metadata, { deadline: Date.now() + 10_000 },
            (error: grpc.ServiceError | null) => resolve(error ? grpc.status[error.code] : "OK"))
        }))

      let tried = 0
      const faults = new Map<string, number>()
      const methods = IAM_SERVICES.flatMap((service) => service.methods.map((method) => ({ path: `/${service.typeName}/${method.name}`, method })))
      for (const [index, { method, path }] of methods.entries()) {
        for (const probe of fc.sample(probeFor(method), { numRuns: RUNS_PER_METHOD, seed: SEED + index })) {
          const status = yield* raw(path, probe.body, probe.authorization)
          tried++
          if (SERVER_FAULTS.has(status) || status === "DEADLINE_EXCEEDED") faults.set(`${path}: ${status}`, (faults.get(`${path}: ${status}`) ?? 0) + 1)
        }
        // Over the message limit (AUTH_IAM_MAX_MESSAGE_BYTES) whatever the method.
        const oversized = yield* raw(path, Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x08]), Buffer.alloc(128 * 1024, 0x61)]), undefined)
        tried++
        expect(oversized).toBe("RESOURCE_EXHAUSTED")
      }
      client.close()
      recordFigure("gRPC bad input", "requests", tried)
      expect([...faults.entries()]).toEqual([])
      expect(tried).toBeGreaterThan(methods.length * RUNS_PER_METHOD)

      const clients = grpcClients(address)
      const registered = yield* Effect.promise(() =>
        clients.call("AuthService", "Register", { username: "after-fuzz", password: "after the fuzz", email: "after-fuzz@example.com" }))
      clients.close()
      expect(registered.ok).toBe(true)
    }))
})
