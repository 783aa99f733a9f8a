/**
 * Metadata rides in every access token, so an update that would make tokens too large for an HTTP header is
 * refused up front (it used to leave the user with tokens the server itself could not read).
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_METADATA_BYTES } from "../../../src/auth/domain/MetadataSize.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"

const message = `user_metadata and app_metadata together must be at most ${MAX_METADATA_BYTES} bytes of JSON`

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })("metadata size limit", (it) => {
  it.effect("a 900 KB metadata update is a 400 that changes nothing; the token keeps working", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const signUp = yield* raw(url, "/signup", { body: { email: uniqueEmail("meta"), password: PASSWORD, data: { plan: "free" } } })
      expect(signUp.status).toBe(200)
      const bearer = signUp.json.access_token as string
      const huge = yield* raw(url, "/user", { method: "PUT", bearer, body: { data: { blob: "x".repeat(900 * 1024) } } })
      expect(huge.status).toBe(400)
      expect(huge.json).toEqual({ code: 400, error_code: "validation_failed", msg: message })
      const after = yield* raw(url, "/user", { bearer })
      expect(after.json.user_metadata.plan).toBe("free")
      expect(after.json.user_metadata.blob).toBeUndefined()
    }))

  it.effect("metadata just under the limit is kept, and the tokens that carry it still work as bearers", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("nearly")
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      const signIn = yield* raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })
      // Leaves room for the identity claims (email, sub, …) and app_metadata already stored.
      const update = yield* raw(url, "/user", {
        method: "PUT",
        bearer: signIn.json.access_token,
        body: { data: { blob: "x".repeat(MAX_METADATA_BYTES - 400) } }
      })
      expect(update.status).toBe(200)
      const refreshed = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: signIn.json.refresh_token } })
      expect(refreshed.status).toBe(200)
      const read = yield* raw(url, "/user", { bearer: refreshed.json.access_token })
      expect(read.status).toBe(200)
      expect(read.json.user_metadata.blob).toHaveLength(MAX_METADATA_BYTES - 400)
    }))

  it.effect("sign-up data over the limit is a 400 and creates no user", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("bigdata")
      const signUp = yield* raw(url, "/signup", { body: { email, password: PASSWORD, data: { blob: "x".repeat(MAX_METADATA_BYTES) } } })
      expect(signUp.status).toBe(400)
      expect(signUp.json.msg).toBe(message)
      const signIn = yield* raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })
      expect(signIn.json.error_code).toBe("invalid_credentials")
    }))
})
