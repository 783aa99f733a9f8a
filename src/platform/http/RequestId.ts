import * as Context from "effect/Context"
import { drawUuid } from "../SecureRandom.js"

/** The current request's id: inherited from REQUEST_ID_HEADER when the proxy sends one, otherwise generated. */
export class RequestId extends Context.Reference<RequestId>()("platform/http/RequestId", {
  defaultValue: () => ""
}) {}

// An inherited id is echoed into logs and error bodies, so keep it short and printable.
const SAFE_ID = /^[\x21-\x7e]{1,200}$/

export const requestIdFrom = (
  headers: Readonly<Record<string, string | undefined>>,
  headerName: string | undefined
): string => {
  const inherited = headerName === undefined ? undefined : headers[headerName.toLowerCase()]
  return inherited !== undefined && SAFE_ID.test(inherited) ? inherited : drawUuid()
}
