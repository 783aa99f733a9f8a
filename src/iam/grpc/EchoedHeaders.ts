/** Request headers connect-es quotes when it refuses their value, and the values it accepts. */
const CHECKED: ReadonlyArray<readonly [string, RegExp]> = [
  ["grpc-timeout", /^\d{1,8}[HMSmun]$/],
  ["connect-timeout-ms", /^\d{1,10}$/],
  ["grpc-encoding", /^(identity|gzip|br)$/],
  ["content-encoding", /^(identity|gzip|br)$/],
  ["connect-content-encoding", /^(identity|gzip|br)$/]
]

/** What a refused value is replaced by: the refusal keeps its code, and says the value is not repeated. */
export const NOT_SHOWN = "(not shown)"

/**
 * connect-es refuses a malformed deadline or an unknown compression with the value in its message ("protocol error:
 * invalid grpc timeout value: …", "unknown compression "…""), which would send input back to the client. Such a
 * value is replaced before connect reads it, so it still refuses it (INVALID_ARGUMENT, UNIMPLEMENTED) without
 * quoting it. Values connect accepts are left alone.
 */
export const withoutEchoedValues = (headers: Headers): void => {
  for (const [name, accepted] of CHECKED) {
    const value = headers.get(name)
    if (value !== null && !accepted.test(value)) headers.set(name, NOT_SHOWN)
  }
}
