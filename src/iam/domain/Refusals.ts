/**
 * The words IAM refuses a request in before any handler runs, the same over gRPC, gRPC-Web, Connect and REST. How
 * connect-es's own refusals are restated in them is the gRPC edge's (grpc/ConnectRefusals).
 */

/** The one size limit's message. */
export const tooLargeMessage = (limitBytes: number): string => `request message is larger than the limit of ${limitBytes} bytes`

export const NOT_PROTOBUF = "request message is not valid protobuf"
