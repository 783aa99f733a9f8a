import * as Effect from "effect/Effect"
import { AuthError } from "../domain/AuthError.js"

const MAX_METADATA_BYTES = 1024 * 1024

/** The body, or undefined once it passes `max` bytes: read no further than that, whatever the sender declares. */
const boundedBody = async (body: ReadableStream<Uint8Array> | null, max: number): Promise<Buffer | undefined> => {
  if (body === null) return Buffer.alloc(0)
  const reader = body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return Buffer.concat(chunks)
    size += value.byteLength
    if (size > max) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
}

/**
 * Fetches an IdP's metadata from its https metadata_url as GoTrue does (Accept: application/xml), bounded: 10 s, 1 MiB,
 * no redirects followed. A non-200 is GoTrue's 400 saml_metadata_fetch_failed, and so is a URL that cannot be
 * reached (GoTrue's 500: the admin's input, not the server's failure).
 */
export const fetchSamlMetadata = (url: string): Effect.Effect<Buffer, AuthError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, {
        headers: { accept: "application/xml;charset=UTF-8" },
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)])
      })
      if (response.status !== 200) {
        await response.body?.cancel()
        return { status: response.status, body: undefined }
      }
      const declared = Number(response.headers.get("content-length") ?? "0")
      if (declared > MAX_METADATA_BYTES) {
        await response.body?.cancel()
        return { status: response.status, body: undefined }
      }
      return { status: response.status, body: await boundedBody(response.body, MAX_METADATA_BYTES) }
    },
    catch: (error) => String(error)
  }).pipe(
    Effect.tapError((reason) => Effect.logWarning("SAML metadata fetch failed").pipe(Effect.annotateLogs({ url, reason }))),
    Effect.mapError(() => AuthError.of(400, "saml_metadata_fetch_failed", `Unable to fetch SAML Metadata from URL '${url}'`)),
    Effect.flatMap(({ body, status }) => {
      if (status !== 200) {
        return Effect.fail(AuthError.of(400, "saml_metadata_fetch_failed", `HTTP ${status} error fetching SAML Metadata from URL '${url}'`))
      }
      if (body === undefined) return Effect.fail(AuthError.validation("SAML Metadata is larger than 1 MiB"))
      return Effect.succeed(body)
    })
  )
