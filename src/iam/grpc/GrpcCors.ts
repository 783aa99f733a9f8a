import { cors } from "@connectrpc/connect"
import { compileCorsOrigins } from "../../domain/CorsOrigins.js"
import type { CorsPolicy } from "../../platform/http/Cors.js"

/**
 * The gRPC port's CORS policy, for Connect and gRPC-Web from browser pages on other origins. It follows the HTTP
 * port's settings: the same origins (CORS_ALLOWED_ORIGINS; every origin when unset, echoed with credentials, as on
 * the HTTP port) and the same extra request headers (CORS_ALLOWED_HEADERS). What it allows besides is what the
 * protocols need, from connect-es's own list: Connect's version and timeout headers, gRPC-Web's `x-grpc-web`,
 * `x-user-agent` and `grpc-timeout`; the bearer token in `authorization`; and, to be read by the page, the gRPC
 * status headers (gRPC-Web answers a failure before any message in headers alone), Connect's encodings and the
 * login throttle's `retry-after`.
 */
export const grpcCorsPolicy = (
  extraAllowedHeaders: ReadonlyArray<string> = [],
  allowedOrigins: ReadonlyArray<string> = []
): CorsPolicy => ({
  allowedMethods: cors.allowedMethods,
  allowedHeaders: ["Accept", "Authorization", ...cors.allowedHeaders, ...extraAllowedHeaders],
  exposedHeaders: [...cors.exposedHeaders, "Retry-After"],
  allowedOrigins: allowedOrigins.length === 0 ? "any" : compileCorsOrigins(allowedOrigins)
})
