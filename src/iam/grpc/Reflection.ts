import { create, createRegistry, type DescFile, type DescService, type Registry, fromBinary as fromBinaryAs, toBinary } from "@bufbuild/protobuf"
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt"
import type { ServiceImpl } from "@connectrpc/connect"
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js"
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js"

type Request = v1.ServerReflectionRequest
type Answer = v1.ServerReflectionResponse["messageResponse"]

// gRPC status numbers inside ErrorResponse (the protocol carries them as plain int32).
const NOT_FOUND = 5
const UNIMPLEMENTED = 12

/** A file and everything it imports, each once, the file itself first. */
const withDependencies = (file: DescFile): ReadonlyArray<DescFile> => {
  const seen = new Map<string, DescFile>()
  const visit = (f: DescFile): void => {
    if (seen.has(f.name)) return
    seen.set(f.name, f)
    f.dependencies.forEach(visit)
  }
  visit(file)
  return [...seen.values()]
}

/** What reflection answers from: types and services by name, files by path (dependencies included). */
export interface ReflectionFiles {
  readonly registry: Registry
  readonly files: ReadonlyMap<string, DescFile>
}

/**
 * Files are found by their path as protoc and every client name them, `gatehouse/iam/v1/iam.proto` (what Python's
 * descriptor pool and grpcurl ask for), and by protobuf-es's name for them, the path without `.proto`, which was
 * the only one found before.
 */
export const reflectionFiles = (roots: ReadonlyArray<DescFile>): ReflectionFiles => {
  const all = roots.flatMap(withDependencies)
  return {
    registry: createRegistry(...all),
    files: new Map(all.flatMap((f) => [[f.proto.name, f], [f.name, f]] as const))
  }
}

/** The file declaring a fully-qualified symbol: a type, a service, or a service's method. */
const fileOfSymbol = (registry: Registry, symbol: string): DescFile | undefined => {
  const found = registry.get(symbol)
  if (found !== undefined) return found.file
  const parent = registry.get(symbol.slice(0, Math.max(0, symbol.lastIndexOf("."))))
  return parent?.kind === "service" && parent.methods.some((m) => `${parent.typeName}.${m.name}` === symbol)
    ? parent.file
    : undefined
}

const files = (list: ReadonlyArray<DescFile>): Answer => ({
  case: "fileDescriptorResponse",
  value: create(v1.FileDescriptorResponseSchema, {
    fileDescriptorProto: list.map((f) => toBinary(FileDescriptorProtoSchema, f.proto))
  })
})
const notFound = (what: string): Answer => ({
  case: "errorResponse",
  value: create(v1.ErrorResponseSchema, { errorCode: NOT_FOUND, errorMessage: `${what} not found` })
})

/** One reflection answer, in v1's shape (v1alpha's is field-for-field the same). */
export const answerReflection = (
  { files: byName, registry }: ReflectionFiles,
  services: ReadonlyArray<DescService>,
  request: Request
): Answer => {
  const { messageRequest } = request
  switch (messageRequest.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, { service: services.map((s) => ({ name: s.typeName })) })
      }
    case "fileByFilename": {
      const file = byName.get(messageRequest.value)
      return file === undefined ? notFound(`file ${messageRequest.value}`) : files(withDependencies(file))
    }
    case "fileContainingSymbol": {
      const file = fileOfSymbol(registry, messageRequest.value)
      return file === undefined ? notFound(`symbol ${messageRequest.value}`) : files(withDependencies(file))
    }
    case "allExtensionNumbersOfType": {
      // The contract declares no extensions, so a known message has none.
      const type = registry.get(messageRequest.value)
      return type?.kind !== "message" ? notFound(`type ${messageRequest.value}`) : {
        case: "allExtensionNumbersResponse",
        value: create(v1.ExtensionNumberResponseSchema, { baseTypeName: messageRequest.value, extensionNumber: [] })
      }
    }
    case "fileContainingExtension":
      return notFound(`extension ${messageRequest.value.containingType}(${messageRequest.value.extensionNumber})`)
    default:
      return {
        case: "errorResponse",
        value: create(v1.ErrorResponseSchema, { errorCode: UNIMPLEMENTED, errorMessage: "unsupported request" })
      }
  }
}

const respond = (registry: ReflectionFiles, services: ReadonlyArray<DescService>, request: Request) =>
  create(v1.ServerReflectionResponseSchema, {
    validHost: request.host,
    originalRequest: request,
    messageResponse: answerReflection(registry, services, request)
  })

/** grpc.reflection.v1.ServerReflection over the given files, listing `services`. */
export const reflectionV1 = (
  registry: ReflectionFiles,
  services: ReadonlyArray<DescService>
): ServiceImpl<typeof v1.ServerReflection> => ({
  serverReflectionInfo: async function*(requests) {
    for await (const request of requests) yield respond(registry, services, request)
  }
})

/**
 * The legacy grpc.reflection.v1alpha, which older grpcurl and grpc_cli builds still ask first. Its
 * messages are v1's under another package, so each is carried across by its wire bytes.
 */
export const reflectionV1alpha = (
  registry: ReflectionFiles,
  services: ReadonlyArray<DescService>
): ServiceImpl<typeof v1alpha.ServerReflection> => ({
  serverReflectionInfo: async function*(requests) {
    for await (const request of requests) {
      const asV1 = fromBinaryAs(v1.ServerReflectionRequestSchema, toBinary(v1alpha.ServerReflectionRequestSchema, request))
      const answer = respond(registry, services, asV1)
      yield fromBinaryAs(v1alpha.ServerReflectionResponseSchema, toBinary(v1.ServerReflectionResponseSchema, answer))
    }
  }
})

export { v1, v1alpha }
