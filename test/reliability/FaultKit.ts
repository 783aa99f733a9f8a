/**
 * What the fault tests share: a request that can never hang (each is bounded by an AbortSignal) and that reports a
 * transport failure as a value, and the check that an error answer is in GoTrue's envelope.
 */

/** The answer to one bounded request, or why there was none. */
export type Outcome =
  | {
    readonly _tag: "Answer"
    readonly status: number
    readonly json: Record<string, unknown> | undefined
    readonly text: string
    readonly startedAt: number
    readonly ms: number
  }
  | { readonly _tag: "NoAnswer"; readonly reason: string; readonly startedAt: number; readonly ms: number }

export interface BoundedRequest {
  readonly method?: string
  readonly body?: unknown
  readonly bearer?: string
  /** The longest the request may take before it counts as a hang; 10 s unless told. */
  readonly boundMs?: number
}

export const boundedFetch = async (base: string, path: string, request: BoundedRequest = {}): Promise<Outcome> => {
  const startedAt = Date.now()
  const headers: Record<string, string> = {}
  if (request.body !== undefined) headers["content-type"] = "application/json"
  if (request.bearer !== undefined) headers["authorization"] = `Bearer ${request.bearer}`
  try {
    const response = await fetch(`${base}${path}`, {
      method: request.method ?? (request.body === undefined ? "GET" : "POST"),
      headers,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(request.boundMs ?? 10_000)
    })
    const text = await response.text()
    let json: Record<string, unknown> | undefined
    try {
      json = JSON.parse(text) as Record<string, unknown>
    } catch {
      json = undefined
    }
    return { _tag: "Answer", status: response.status, json, text, startedAt, ms: Date.now() - startedAt }
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause
    const reason = error instanceof Error && error.name === "TimeoutError"
      ? "hang"
      : `${error instanceof Error ? error.name : "error"}${cause?.code === undefined ? "" : ` ${cause.code}`}`
    return { _tag: "NoAnswer", reason, startedAt, ms: Date.now() - startedAt }
  }
}

/** GoTrue's error envelope: { code, error_code, msg } with the status repeated in `code`. */
export const inEnvelope = (outcome: Outcome): boolean =>
  outcome._tag === "Answer" && outcome.json !== undefined && outcome.json["code"] === outcome.status &&
  typeof outcome.json["error_code"] === "string" && typeof outcome.json["msg"] === "string"

export const errorCode = (outcome: Outcome): string | undefined =>
  outcome._tag === "Answer" && outcome.json !== undefined && typeof outcome.json["error_code"] === "string"
    ? outcome.json["error_code"]
    : undefined

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
