/**
 * URI_ALLOW_LIST through the real client: the confirmation link carries redirect_to when the list allows it, and
 * SITE_URL when neither the list nor the site does.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, linkIn, mailTo, PASSWORD, uniqueEmail } from "./AcceptanceKit.js"

const SITE_URL = "http://app.gatehouse.test:3000"

acceptance({
  AUTH_SITE_URL: SITE_URL,
  AUTH_URI_ALLOW_LIST: "https://*.preview.gatehouse.test/**, myapp://callback"
})("redirect_to and URI_ALLOW_LIST", (it) => {
  it.effect("a sign-up's confirmation link keeps an allowed redirect_to and replaces any other with SITE_URL", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const cases = [
        ["https://pr-12.preview.gatehouse.test/auth/callback?next=%2Fhome", "https://pr-12.preview.gatehouse.test/auth/callback?next=%2Fhome"],
        ["myapp://callback", "myapp://callback"],
        ["https://preview.gatehouse.test.evil.example/", SITE_URL],
        ["https://pr-12.preview.gatehouse.test@evil.example/", SITE_URL],
        ["http://pr-12.preview.gatehouse.test/", SITE_URL]
      ] as const
      for (const [requested, expected] of cases) {
        const email = uniqueEmail("allow-list")
        const { error } = yield* call(() =>
          authClient(url).client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: requested } })
        )
        expect(error).toBeNull()
        const [mail] = yield* mailTo(email)
        expect(linkIn(mail!).searchParams.get("redirect_to"), requested).toBe(expected)
      }
    }))
})
