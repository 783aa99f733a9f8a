import { Effect } from "effect"
import { AuthError } from "../domain/AuthError.js"

const MAX_METADATA_BYTES = 1024 * 1024

/**
 * Fetches an IdP's metadata from its https metadata_url as GoTrue does (Accept: application/xml), bounded: 10 s, 1 MiB,
 * no redirects followed. A non-200 is GoTrue's 400 saml_metadata_fetch_failed; a network failure a 500.
 */
export const fetchSamlMetadata = (url: string): Effect.Effect<Buffer, AuthError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, {
        headers: { accept: "application/xml;charset=UTF-8" },
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)])
      })
      const declared = Number(response.headers.get("content-length") ?? "0")
      if (declared > MAX_METADATA_BYTES) return { status: response.status, body: undefined }
      const body = Buffer.from(await response.arrayBuffer())
      return { status: response.status, body: body.length > MAX_METADATA_BYTES ? undefined : body }
    },
    catch: (error) => String(error)
  }).pipe(
    Effect.tapError((reason) => Effect.logWarning("SAML metadata fetch failed").pipe(Effect.annotateLogs({ url, reason }))),
    Effect.mapError(() => AuthError.of(500, "unexpected_failure", "Unable to fetch SAML Metadata")),
    Effect.flatMap(({ body, status }) => {
      if (status !== 200) {
        return Effect.fail(AuthError.of(400, "saml_metadata_fetch_failed", `HTTP ${status} error fetching SAML Metadata from URL '${url}'`))
      }
      if (body === undefined) return Effect.fail(AuthError.validation("SAML Metadata is larger than 1 MiB"))
      return Effect.succeed(body)
    })
  )
