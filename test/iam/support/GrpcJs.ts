import { fileURLToPath } from "node:url"
import * as grpc from "@grpc/grpc-js"
import * as protoLoader from "@grpc/proto-loader"

/**
 * A plain @grpc/grpc-js client built from proto/ at run time with @grpc/proto-loader: it shares nothing with
 * the generated code, so it checks the wire contract the way any other language's client would.
 */
const PROTO_ROOT = fileURLToPath(new URL("../../../proto/", import.meta.url))

const definition = protoLoader.loadSync("gatehouse/iam/v1/iam.proto", {
  includeDirs: [PROTO_ROOT],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true
})
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  gatehouse: { iam: { v1: Record<string, grpc.ServiceClientConstructor> } }
}

export type Reply =
  | { readonly ok: true; readonly value: any }
  | { readonly ok: false; readonly code: grpc.status; readonly details: string; readonly metadata: Readonly<Record<string, string>> }

export interface IamGrpcClients {
  /** `metadata`: more request metadata besides the bearer token (a client key header, say). */
  readonly call: (
    service: "AuthService" | "RoleService" | "PermissionService",
    method: string,
    request: object,
    token?: string,
    metadata?: Readonly<Record<string, string>>
  ) => Promise<Reply>
  readonly close: () => void
}

export const grpcClients = (address: string): IamGrpcClients => {
  const clients = Object.fromEntries(["AuthService", "RoleService", "PermissionService"].map((name) => [
    name,
    new loaded.gatehouse.iam.v1[name]!(address, grpc.credentials.createInsecure())
  ])) as Record<string, grpc.Client & Record<string, Function>>
  return {
    call: (service, method, request, token, extra = {}) =>
      new Promise((resolve) => {
        const metadata = new grpc.Metadata()
        if (token !== undefined) metadata.set("authorization", `Bearer ${token}`)
        for (const [key, value] of Object.entries(extra)) metadata.set(key, value)
        clients[service]![method]!(request, metadata, (error: grpc.ServiceError | null, value: unknown) =>
          resolve(error === null ? { ok: true, value } : {
            ok: false,
            code: error.code,
            details: error.details,
            metadata: Object.fromEntries(Object.entries(error.metadata.getMap()).map(([key, v]) => [key, String(v)]))
          }))
      }),
    close: () => Object.values(clients).forEach((c) => c.close())
  }
}

export { grpc }
