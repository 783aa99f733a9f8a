import { Code } from "@connectrpc/connect"
import { NOT_PROTOBUF, tooLargeMessage } from "../domain/Refusals.js"

/**
 * A call that connect-es refused before any handler ran (a body over the size limit, bytes that are not protobuf),
 * as IAM states it on every transport. connect-es words these its own way: "message size 131076 is larger than
 * configured readMaxBytes 65536", and INTERNAL "parse binary: …" for the client's own malformed bytes.
 */
export interface Refusal {
  readonly code: Code
  readonly message: string
}

/**
 * A refusal as the client should see it: unparsable protobuf is the client's INVALID_ARGUMENT, not INTERNAL; a
 * message over the limit is RESOURCE_EXHAUSTED with the limit, in the same words as REST. Anything else is kept.
 */
export const restateRefusal = (refusal: Refusal, limitBytes: number): Refusal =>
  refusal.code === Code.Internal && refusal.message.startsWith("parse binary")
    ? { code: Code.InvalidArgument, message: NOT_PROTOBUF }
    : refusal.code === Code.ResourceExhausted && refusal.message.includes("readMaxBytes")
    ? { code: Code.ResourceExhausted, message: tooLargeMessage(limitBytes) }
    : refusal

/**
 * The HTTP status a Connect-protocol refusal is answered with: Connect's table, except that a message over the size
 * limit is 413, as on REST (Connect's 429 would tell a client to retry the same body later). Connect clients read
 * the code from the JSON body, so they see resource_exhausted either way.
 */
export const connectRefusalStatus = (refusal: Refusal, connectStatus: number, limitBytes: number): number =>
  refusal.code === Code.ResourceExhausted && refusal.message === tooLargeMessage(limitBytes) ? 413 : connectStatus

/** Connect's JSON name for a code: `invalid_argument`. */
export const connectCodeName = (code: Code): string => Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()

/** The code named `invalid_argument` (Connect's JSON), or undefined for a name that is none. */
export const codeOfConnectName = (name: string): Code | undefined => {
  const found = Object.values(Code).find((value): value is Code => typeof value === "number" && connectCodeName(value) === name)
  return found
}
