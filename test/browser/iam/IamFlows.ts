/**
 * The page script of test/browser/IamInChromium.test.ts, bundled with esbuild and run in chromium: one IAM flow
 * (register, a refused login, login, calls with the bearer token, a refused call, refresh, logout) through any
 * client, and the clients: connect-web's Connect (JSON and binary) and gRPC-Web transports, and the official grpc-web
 * client in both its modes (text, its default, and binary). The grpc-web client is given the same generated
 * messages (src/gen, protoc-gen-es) through its MethodDescriptor's serializer functions, so no second code generator
 * is needed.
 */
import { create, type DescMessage, fromBinary, type DescMethodUnary, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf"
import { ConnectError, createClient, type Transport } from "@connectrpc/connect"
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web"
import { GrpcWebClientBase, MethodDescriptor, MethodType, type RpcError } from "grpc-web"
import { AuthService, RoleService } from "../../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { Health, HealthCheckResponse_ServingStatus } from "../../../src/gen/grpc/health/v1/health_pb.js"

interface CallOptions {
  readonly bearer?: string
  readonly timeoutMs?: number
}

/** One unary call, whatever the client. */
type Unary = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  options?: CallOptions
) => Promise<MessageShape<O>>

/** connect-web: the generated service's client, as an app writes it. */
const viaConnectWeb = (transport: Transport): Unary => (method, request, options = {}) => {
  const client = createClient(method.parent, transport) as unknown as Record<string, (request: unknown, options: unknown) => Promise<any>>
  return client[method.localName]!(request, {
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    headers: options.bearer === undefined ? {} : { authorization: `Bearer ${options.bearer}` }
  })
}

/** The official grpc-web client, its messages (de)serialized by protobuf-es. */
const viaGrpcWeb = (baseUrl: string, format: "text" | "binary"): Unary => {
  const client = new GrpcWebClientBase({ format })
  return (method, request, options = {}) => {
    const path = `/${method.parent.typeName}/${method.name}`
    const descriptor = new MethodDescriptor(
      path, MethodType.UNARY, Object as never, Object as never,
      (message: MessageShape<typeof method.input>) => toBinary(method.input, message),
      (bytes: Uint8Array) => fromBinary(method.output, bytes)
    )
    const metadata: Record<string, string> = {
      ...(options.bearer === undefined ? {} : { authorization: `Bearer ${options.bearer}` }),
      // The client turns a deadline into grpc-timeout.
      ...(options.timeoutMs === undefined ? {} : { deadline: String(Date.now() + options.timeoutMs) })
    }
    return client.unaryCall(`${baseUrl}${path}`, create(method.input, request), metadata, descriptor) as Promise<never>
  }
}

/** How a call failed, as the page sees it: the gRPC code's number and the message. */
const failure = (call: () => Promise<unknown>): Promise<{ code: number; message: string } | "succeeded"> =>
  call().then(
    () => "succeeded" as const,
    (error: unknown) =>
      error instanceof ConnectError
        ? { code: error.code as number, message: error.rawMessage }
        : { code: (error as RpcError).code as number, message: (error as RpcError).message }
  )

const flow = async (call: Unary, name: string) => {
  const username = `browser-${name}`
  const password = "browser password"
  const identifier = { case: "username" as const, value: username }
  const registered = await call(AuthService.method.register, { username, password, email: `${name}@example.com` })
  const wrongPassword = await failure(() => call(AuthService.method.login, { identifier, password: "wrong password" }))
  const login = await call(AuthService.method.login, { identifier, password }, { timeoutMs: 30_000 })
  const bearer = login.token!.accessToken
  const myRoles = await call(RoleService.method.listUserRoles, {}, { bearer })
  const validated = await call(AuthService.method.validateToken, {}, { bearer })
  const forbidden = await failure(() => call(RoleService.method.createRole, { name: `role-${name}` }, { bearer }))
  const refreshed = await call(AuthService.method.refreshToken, { refreshToken: login.token!.refreshToken })
  const next = refreshed.token!.accessToken
  const afterRefresh = await call(AuthService.method.validateToken, {}, { bearer: next })
  const loggedOut = await call(AuthService.method.logout, {}, { bearer: next })
  const afterLogout = await call(AuthService.method.validateToken, { token: next })
  return {
    registered: registered.user?.username,
    registeredId: registered.user?.id === login.user?.id,
    wrongPassword,
    myRoles: myRoles.roles.map((role) => role.name),
    validated: { valid: validated.valid, username: validated.username },
    forbidden,
    rotated: refreshed.token!.refreshToken !== login.token!.refreshToken && next !== bearer,
    afterRefresh: { valid: afterRefresh.valid, username: afterRefresh.username },
    loggedOut: loggedOut.success,
    afterLogout: { valid: afterLogout.valid, reason: afterLogout.reason }
  }
}

/**
 * The first answer of grpc.health.v1.Health/Watch, a server stream that stays open, through the grpc-web client in
 * text mode (its binary mode reads an answer only when it is complete, so it cannot follow a stream): each message
 * must reach the page when it is sent, not when the stream ends.
 */
const watchHealth = (baseUrl: string) =>
  new Promise<string>((resolve, reject) => {
    const waited = setTimeout(() => reject(new Error("no message on the stream within 20 s")), 20_000)
    const method = Health.method.watch
    const path = `/${Health.typeName}/${method.name}`
    const descriptor = new MethodDescriptor<MessageShape<typeof method.input>, MessageShape<typeof method.output>>(
      path, MethodType.SERVER_STREAMING, Object as never, Object as never,
      (message: MessageShape<typeof method.input>) => toBinary(method.input, message),
      (bytes: Uint8Array) => fromBinary(method.output, bytes)
    )
    const stream = new GrpcWebClientBase({ format: "text" }).serverStreaming(`${baseUrl}${path}`, create(method.input, {}), {}, descriptor)
    stream.on("data", (response) => {
      clearTimeout(waited)
      stream.cancel()
      resolve(HealthCheckResponse_ServingStatus[response.status])
    })
    stream.on("error", (error) => reject(new Error(`${error.code}: ${error.message}`)))
  })

export const iamFlows = {
  connect: (baseUrl: string, useBinaryFormat: boolean) =>
    flow(viaConnectWeb(createConnectTransport({ baseUrl, useBinaryFormat })), useBinaryFormat ? "connect-binary" : "connect-json"),
  connectGrpcWeb: (baseUrl: string) => flow(viaConnectWeb(createGrpcWebTransport({ baseUrl })), "connect-web-grpc-web"),
  grpcWeb: (baseUrl: string, format: "text" | "binary") => flow(viaGrpcWeb(baseUrl, format), `grpc-web-${format}`),
  watchHealth
}

;(globalThis as unknown as { iamFlows: typeof iamFlows }).iamFlows = iamFlows
