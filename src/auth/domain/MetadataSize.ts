import * as Option from "effect/Option"

/**
 * The most JSON that user_metadata and app_metadata may hold together. Both travel in every access token, and
 * a bearer token must fit in an HTTP header: Node (and most proxies) refuse request headers over 16 KiB, and
 * base64url adds a third. 8 KiB of metadata keeps a token near 12 KiB, so it still works as a bearer.
 */
export const MAX_METADATA_BYTES = 8 * 1024

/** The size of a metadata object as stored and as carried in tokens: its UTF-8 JSON. */
export const metadataBytes = (metadata: Readonly<Record<string, unknown>>): number =>
  Buffer.byteLength(JSON.stringify(metadata), "utf8")

/** Why the user's metadata is too large to be carried in tokens, if it is. */
export const metadataTooLarge = (
  userMetadata: Readonly<Record<string, unknown>>,
  appMetadata: Readonly<Record<string, unknown>>
): Option.Option<string> =>
  metadataBytes(userMetadata) + metadataBytes(appMetadata) > MAX_METADATA_BYTES
    ? Option.some(`user_metadata and app_metadata together must be at most ${MAX_METADATA_BYTES} bytes of JSON`)
    : Option.none()
