import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf"
import * as grpc from "@grpc/grpc-js"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { GrpcClients } from "../load/GrpcClients.js"
import { runLoops } from "../load/LoadWindow.js"
import { PASSWORD } from "../Seed.js"
import type { Scenario } from "./Scenario.js"

const LOGIN = "/gatehouse.iam.v1.AuthService/Login"
const VALIDATE = "/gatehouse.iam.v1.AuthService/ValidateToken"

// Enough HTTP/2 connections to reach every worker of either side; the calls in flight are spread over them.
const channelsFor = (concurrency: number): number => Math.min(concurrency, 10)

const loginRequest = (username: string): Uint8Array =>
  toBinary(pb.LoginRequestSchema, create(pb.LoginRequestSchema, { identifier: { case: "username", value: username }, password: PASSWORD }))

const validateRequest = (token: string): Uint8Array =>
  toBinary(pb.ValidateTokenRequestSchema, create(pb.ValidateTokenRequestSchema, { token }))

/** An access token from a Login on Gatehouse; both sides verify it (same key, key id and issuer). */
const accessToken = async (grpcAddress: string, username: string): Promise<string> => {
  const clients = new GrpcClients(grpcAddress, 1)
  try {
    return fromBinary(pb.LoginResponseSchema, await clients.call(0, LOGIN, loginRequest(username))).token!.accessToken
  } finally {
    clients.close()
  }
}

/**
 * One call through @grpc/grpc-js, for the statement check: a real gRPC client must accept both servers' answers
 * (the load itself uses the lighter GrpcClients).
 */
const grpcJsCaller = (address: string) => {
  const client = new grpc.Client(address, grpc.credentials.createInsecure())
  return (path: string, request: Uint8Array): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest(path, (bytes: Uint8Array) => Buffer.from(bytes), (bytes: Buffer) => bytes, request, (error, answer) =>
        error !== null || answer === undefined ? reject(error ?? new Error("no answer")) : resolve(answer)))
}

export const iamLogin: Scenario = {
  id: "iam-login",
  title: "IAM Login (gRPC)",
  concurrency: (o) => o.bcryptConnections,
  load: async (target, { options, seeded }) => {
    const requests = seeded.iamAccounts.map((a) => loginRequest(a.username))
    const clients = new GrpcClients(target.grpc, channelsFor(options.bcryptConnections))
    let n = 0
    return {
      run: (window) => runLoops({
        concurrency: options.bcryptConnections,
        window,
        send: (slot) => clients.call(slot, LOGIN, requests[n++ % requests.length]!).then(() => undefined)
      }),
      close: () => clients.close()
    }
  },
  single: async (target, { seeded }) => {
    const call = grpcJsCaller(target.grpc)
    const request = loginRequest(seeded.iamAccounts[0]!.username)
    return async () => toJson(pb.LoginResponseSchema, fromBinary(pb.LoginResponseSchema, await call(LOGIN, request)))
  }
}

export const iamValidate: Scenario = {
  id: "iam-validate",
  title: "IAM ValidateToken (gRPC)",
  concurrency: (o) => o.connections,
  load: async (target, { gatehouse, options, seeded }) => {
    const request = validateRequest(await accessToken(gatehouse.grpc, seeded.iamAccounts[0]!.username))
    const clients = new GrpcClients(target.grpc, channelsFor(options.connections))
    return {
      run: (window) => runLoops({
        concurrency: options.connections,
        window,
        send: async (slot) => {
          // An OK answer can still say "not valid": that must count as a failure, not as a fast success.
          const answer = fromBinary(pb.ValidateTokenResponseSchema, await clients.call(slot, VALIDATE, request))
          if (!answer.valid) throw new Error(`ValidateToken answered valid=false (${answer.reason})`)
        }
      }),
      close: () => clients.close()
    }
  },
  single: async (target, { gatehouse, seeded }) => {
    const request = validateRequest(await accessToken(gatehouse.grpc, seeded.iamAccounts[0]!.username))
    const call = grpcJsCaller(target.grpc)
    return async () => toJson(pb.ValidateTokenResponseSchema, fromBinary(pb.ValidateTokenResponseSchema, await call(VALIDATE, request)))
  }
}
