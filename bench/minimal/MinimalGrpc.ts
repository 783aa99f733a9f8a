import { randomUUID } from "node:crypto"
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2"
import { create, fromBinary, toBinary } from "@bufbuild/protobuf"
import { timestampFromDate } from "@bufbuild/protobuf/wkt"
import { InspectFooter } from "paseto"
import type pg from "pg"
import { frame, unframe } from "../GrpcFrame.js"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { nodeV4 } from "../../src/iam/tokens/NodeEd25519.js"
import type { MinimalConfig } from "./MinimalConfig.js"
import { type Crypto, iamLoginSql } from "./MinimalSql.js"

// The same PASETO library calls as Gatehouse (src/iam/tokens/IamKeys.ts and PasetoTokens.ts).
// The same PASETO path as Gatehouse (the paseto library with its Ed25519 step on node:crypto), so the comparison
// measures the framework around the token check, not two signature implementations.
const v4 = nodeV4

const ACCESS_TTL_MS = 15 * 60 * 1000
const REFRESH_TTL_MS = 30 * 24 * 60 * 60 * 1000

const Status = { OK: 0, INVALID_ARGUMENT: 3, UNAUTHENTICATED: 16, UNIMPLEMENTED: 12, INTERNAL: 13 } as const

class GrpcFailure extends Error {
  constructor(readonly code: number, message: string) {
    super(message)
  }
}

/** The IAM keys from the PASERK k4.secret (seed and public key) that Gatehouse gets too. */
export const iamKeys = async (config: MinimalConfig) => {
  const secret = config.pasetoSecretKey as `k4.secret.${string}`
  const publicKey = `k4.public.${Buffer.from(secret.slice("k4.secret.".length), "base64url").subarray(32).toString("base64url")}` as const
  return {
    kid: config.pasetoKeyId,
    secret: await v4.ImportSecretKey(secret),
    public: await v4.ImportPublicKey(publicKey)
  }
}

type Keys = Awaited<ReturnType<typeof iamKeys>>

const request = (body: Buffer): Uint8Array => {
  try {
    return unframe(body)
  } catch (error) {
    throw new GrpcFailure(Status.INVALID_ARGUMENT, error instanceof Error ? error.message : "bad message")
  }
}

/** Login and ValidateToken of gatehouse.iam.v1.AuthService on bare node:http2, with no gRPC library. */
export const minimalGrpcHandler = (pool: pg.Pool, crypto: Crypto, keys: Keys, config: MinimalConfig) => {
  const footer = new TextEncoder().encode(JSON.stringify({ kid: keys.kid }))
  const sign = (claims: Record<string, unknown>, now: Date) =>
    v4.Sign(keys.secret, { ...claims, iss: config.iamIssuer }, { footer, now })

  const login = async (bytes: Uint8Array): Promise<Uint8Array> => {
    const request = fromBinary(pb.LoginRequestSchema, bytes)
    if (request.identifier.case !== "username" || request.password === "") {
      throw new GrpcFailure(Status.INVALID_ARGUMENT, "username and password are required")
    }
    const now = new Date()
    const family = randomUUID()
    const refresh = { jti: randomUUID(), family, expiresAt: new Date(now.getTime() + REFRESH_TTL_MS) }
    const found = await iamLoginSql(pool, crypto.checkPassword, { username: request.identifier.value, password: request.password }, refresh)
    if (found === "invalid") throw new GrpcFailure(Status.UNAUTHENTICATED, "invalid credentials")
    const { account, roles } = found
    const sub = String(account.id)
    const expiresAt = new Date(now.getTime() + ACCESS_TTL_MS)
    const accessToken = await sign({
      sub, jti: randomUUID(), typ: "access", fam: family, username: account.username, roles, exp: expiresAt.toISOString()
    }, now)
    const refreshToken = await sign({ sub, jti: refresh.jti, typ: "refresh", fam: family, exp: refresh.expiresAt.toISOString() }, now)
    return toBinary(pb.LoginResponseSchema, create(pb.LoginResponseSchema, {
      user: {
        id: account.id,
        username: account.username,
        email: account.email,
        createdAt: timestampFromDate(account.created_at),
        updatedAt: timestampFromDate(account.updated_at)
      },
      token: {
        accessToken,
        tokenType: "Bearer",
        expiresIn: ACCESS_TTL_MS / 1000,
        refreshToken,
        expiresAt: timestampFromDate(expiresAt),
        refreshExpiresAt: timestampFromDate(refresh.expiresAt)
      }
    }))
  }

  const validate = async (bytes: Uint8Array, headers: IncomingHttpHeaders): Promise<Uint8Array> => {
    const request = fromBinary(pb.ValidateTokenRequestSchema, bytes)
    const token = request.token !== "" ? request.token : /^Bearer (.+)$/i.exec(headers.authorization ?? "")?.[1]
    if (token === undefined) throw new GrpcFailure(Status.INVALID_ARGUMENT, "token is required")
    const answer = (fields: Parameters<typeof create<typeof pb.ValidateTokenResponseSchema>>[1]) =>
      toBinary(pb.ValidateTokenResponseSchema, create(pb.ValidateTokenResponseSchema, fields))
    let kid: unknown
    try {
      kid = (JSON.parse(new TextDecoder().decode(InspectFooter(token))) as { kid?: unknown }).kid
    } catch {
      return answer({ valid: false, reason: "malformed" })
    }
    if (kid !== keys.kid) return answer({ valid: false, reason: "unknown_key" })
    const claims = await v4.Verify(keys.public, token, { issuer: config.iamIssuer, now: new Date(), requiredClaims: ["sub", "jti", "exp"] })
      .then((verified) => verified.claims as Record<string, any>, () => undefined)
    if (claims === undefined) return answer({ valid: false, reason: "invalid_signature" })
    if (claims.typ !== "access") return answer({ valid: false, reason: "wrong_type" })
    return answer({
      valid: true,
      userId: Number(claims.sub),
      username: claims.username ?? "",
      roles: claims.roles ?? [],
      expiresAt: timestampFromDate(new Date(claims.exp)),
      tokenId: claims.jti
    })
  }

  const methods: Record<string, (bytes: Uint8Array, headers: IncomingHttpHeaders) => Promise<Uint8Array>> = {
    "/gatehouse.iam.v1.AuthService/Login": login,
    "/gatehouse.iam.v1.AuthService/ValidateToken": validate
  }

  const fail = (stream: ServerHttp2Stream, code: number, message: string): void => {
    if (stream.destroyed) return
    // A trailers-only answer: the status travels in the one HEADERS frame.
    stream.respond({
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(code),
      "grpc-message": encodeURIComponent(message)
    }, { endStream: true })
  }

  return (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    const method = methods[String(headers[":path"])]
    const chunks: Array<Buffer> = []
    stream.on("data", (chunk: Buffer) => chunks.push(chunk))
    stream.on("error", () => undefined)
    stream.on("end", () => {
      if (method === undefined) return fail(stream, Status.UNIMPLEMENTED, "method not implemented")
      Promise.resolve()
        .then(() => method(request(Buffer.concat(chunks)), headers))
        .then((message) => {
          if (stream.destroyed) return
          stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true })
          stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }))
          stream.end(frame(message))
        }, (error: unknown) => {
          if (error instanceof GrpcFailure) return fail(stream, error.code, error.message)
          process.stderr.write(`minimal gRPC: ${error instanceof Error ? error.stack : String(error)}\n`)
          fail(stream, Status.INTERNAL, "internal error")
        })
    })
  }
}
