/**
 * Email change through auth-js: MAILER_SECURE_EMAIL_CHANGE_ENABLED=false (one mail, to the new address, whose
 * code or link applies the change at once), and the PKCE flow (auth-js with flowType pkce sends a code_challenge
 * with the new email; the links hand out a code that exchangeCodeForSession trades for a session), with the
 * default double confirmation and without it. The default's double confirmation by code is in Verify.test.ts.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  authClient,
  call,
  codeIn,
  decodeJwt,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  uniqueEmail,
  versionedError
} from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"
const FIRST_HALF_MESSAGE = "Confirmation link accepted. Please proceed to confirm link sent to the other email"

/**
 * What a browser's localStorage is to auth-js, so a PKCE client keeps its session and verifier. auth-js 2.109's
 * updateUser stores the verifier and then, saving the updated session, deletes it again (supabase-js#2512, fixed
 * by #2513): `keepVerifier` puts it back as a fixed auth-js would have kept it, before the link's code is exchanged.
 */
const memoryStorage = () => {
  const items = new Map<string, string>()
  let verifier: readonly [string, string] | undefined
  return {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => {
      if (key.endsWith("-code-verifier")) verifier = [key, value]
      items.set(key, value)
    },
    removeItem: (key: string) => void items.delete(key),
    keepVerifier: () => {
      if (verifier !== undefined) items.set(verifier[0], verifier[1])
    }
  }
}

/** GET of a mailed link as a browser makes it, without following the 303. */
const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => ({ status: response.status, location: new URL(response.headers.get("location") ?? "") }))
  )

/** A confirmed user signed in on a fresh client (PKCE when asked): the client, its address and its mail so far. */
const signedIn = (tag: string, flowType: "implicit" | "pkce" = "implicit") =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    const { client: signer } = authClient(url)
    expect((yield* call(() => signer.signUp({ email, password: PASSWORD }))).error).toBeNull()
    const [confirmation] = yield* mailTo(email)
    expect((yield* call(() => signer.verifyOtp({ email, token: codeIn(confirmation!), type: "signup" }))).error).toBeNull()
    const storage = memoryStorage()
    const { client } = authClient(url, { flowType, persistSession: true, storage })
    expect((yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
    return { url, client, email, storage }
  })

acceptance({ AUTH_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false", AUTH_SMTP_MAX_FREQUENCY: "0" })(
  "MAILER_SECURE_EMAIL_CHANGE_ENABLED=false",
  (it) => {
    it.effect("updateUser({email}) mails the new address only, and verifyOtp with its code applies the change at once", () =>
      Effect.gen(function*() {
        const { client, email } = yield* signedIn("single")
        const newEmail = uniqueEmail("single-new")
        const updated = yield* call(() => client.updateUser({ email: newEmail }))
        expect(updated.error).toBeNull()
        expect(updated.data.user).toMatchObject({ email, new_email: newEmail })
        const toNew = yield* mailTo(newEmail)
        expect(toNew).toHaveLength(1)
        // The sign-up confirmation only.
        expect(yield* mailTo(email)).toHaveLength(1)

        const verified = yield* call(() => client.verifyOtp({ email: newEmail, token: codeIn(toNew[0]!), type: "email_change" }))
        expect(verified.error).toBeNull()
        expect(verified.data.session).not.toBeNull()
        expect(verified.data.user).toMatchObject({ email: newEmail })
        expect(verified.data.user!.new_email).toBeUndefined()
        const { client: fresh } = authClient(yield* ServerUrl)
        expect((yield* call(() => fresh.signInWithPassword({ email: newEmail, password: PASSWORD }))).error).toBeNull()
      }))

    it.effect("the new address's link applies it at once too: a session in the fragment", () =>
      Effect.gen(function*() {
        const { client, email, url } = yield* signedIn("single-link")
        const newEmail = uniqueEmail("single-link-new")
        expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
        const [mail] = yield* mailTo(newEmail)
        const { location, status } = yield* follow(url, linkIn(mail!))
        expect(status).toBe(303)
        const fragment = new URLSearchParams(location.hash.slice(1))
        expect(fragment.get("type")).toBe("email_change")
        expect(fragment.get("message")).toBeNull()
        const user = yield* call(() => client.getUser(fragment.get("access_token")!))
        expect(user.data.user).toMatchObject({ email: newEmail })
        expect(yield* mailTo(email)).toHaveLength(1)
      }))

    it.effect("resend(email_change) mails the new address only", () =>
      Effect.gen(function*() {
        const { client, email } = yield* signedIn("single-resend")
        const newEmail = uniqueEmail("single-resend-new")
        expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
        expect((yield* call(() => client.resend({ type: "email_change", email: newEmail }))).error).toBeNull()
        const toNew = yield* mailTo(newEmail)
        expect(toNew).toHaveLength(2)
        expect(yield* mailTo(email)).toHaveLength(1)
        const verified = yield* call(() => client.verifyOtp({ email: newEmail, token: codeIn(toNew[1]!), type: "email_change" }))
        expect(verified.error).toBeNull()
        expect(verified.data.user).toMatchObject({ email: newEmail })
      }))

    it.effect("with PKCE: the one link's ?code= and exchangeCodeForSession give a session for the new address", () =>
      Effect.gen(function*() {
        const { client, storage, url } = yield* signedIn("single-pkce", "pkce")
        const newEmail = uniqueEmail("single-pkce-new")
        expect((yield* call(() => client.updateUser({ email: newEmail }, { emailRedirectTo: `${SITE_URL}/changed` }))).error).toBeNull()
        const toNew = yield* mailTo(newEmail)
        expect(toNew).toHaveLength(1)
        const link = linkIn(toNew[0]!)
        expect(link.searchParams.get("token")).toMatch(/^pkce_[0-9a-f]{56}$/)
        const { location, status } = yield* follow(url, link)
        expect(status).toBe(303)
        expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/changed`)
        storage.keepVerifier()
        const exchanged = yield* call(() => client.exchangeCodeForSession(location.searchParams.get("code")!))
        expect(exchanged.error).toBeNull()
        expect(exchanged.data.user).toMatchObject({ email: newEmail })
        expect(decodeJwt(exchanged.data.session!.access_token).payload["amr"][0].method).toBe("email_change")
      }))
  }
)

acceptance({ AUTH_SMTP_MAX_FREQUENCY: "0" })("email change with PKCE, double confirmation (the default)", (it) => {
  it.effect("both links are pkce_: the first answers the message, the second the code, which exchanges for the new address", () =>
    Effect.gen(function*() {
      const { client, email, storage, url } = yield* signedIn("double-pkce", "pkce")
      const newEmail = uniqueEmail("double-pkce-new")
      expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
      const [toNew] = yield* mailTo(newEmail)
      const toCurrent = (yield* mailTo(email)).at(-1)!
      for (const mail of [toNew!, toCurrent]) expect(linkIn(mail).searchParams.get("token")).toMatch(/^pkce_[0-9a-f]{56}$/)

      const first = yield* follow(url, linkIn(toCurrent))
      expect(first.status).toBe(303)
      expect(first.location.searchParams.get("code")).toBeNull()
      // GoTrue's prepRedirectURL: in a PKCE flow the message is in the query as well as the fragment.
      expect(first.location.searchParams.get("message")).toBe(FIRST_HALF_MESSAGE)
      expect(new URLSearchParams(first.location.hash.slice(1)).get("message")).toBe(FIRST_HALF_MESSAGE)
      expect((yield* call(() => client.getUser())).data.user!.email).toBe(email)

      const second = yield* follow(url, linkIn(toNew!))
      expect(second.status).toBe(303)
      storage.keepVerifier()
      const exchanged = yield* call(() => client.exchangeCodeForSession(second.location.searchParams.get("code")!))
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.user).toMatchObject({ email: newEmail })
      expect(exchanged.data.user!.new_email).toBeUndefined()
    }))

  it.effect("malformed PKCE parameters with a new email are GoTrue's 400, and nothing is mailed", () =>
    Effect.gen(function*() {
      const { client, url } = yield* signedIn("bad-pkce")
      const bearer = (yield* call(() => client.getSession())).data.session!.access_token
      const newEmail = uniqueEmail("bad-pkce-new")
      const put = yield* raw(url, "/user", {
        method: "PUT",
        bearer,
        apiVersion: true,
        body: { email: newEmail, code_challenge: "short", code_challenge_method: "s256" }
      })
      expect(put.status).toBe(400)
      expect(put.json).toEqual(versionedError("validation_failed", "code_challenge has to be between 43 and 128 characters"))
      expect(yield* mailTo(newEmail)).toEqual([])
    }))

  it.effect("a PKCE email change's codes still verify by POST /verify, for a session", () =>
    Effect.gen(function*() {
      const { client, email } = yield* signedIn("double-pkce-code", "pkce")
      const newEmail = uniqueEmail("double-pkce-code-new")
      expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
      const [toNew] = yield* mailTo(newEmail)
      const toCurrent = (yield* mailTo(email)).at(-1)!
      const first = yield* call(() => client.verifyOtp({ email: newEmail, token: codeIn(toNew!), type: "email_change" }))
      expect(first.error).toBeNull()
      expect(first.data.session).toBeNull()
      const second = yield* call(() => client.verifyOtp({ email, token: codeIn(toCurrent), type: "email_change" }))
      expect(second.error).toBeNull()
      expect(second.data.user).toMatchObject({ email: newEmail })
    }))

  it.effect("resend(email_change) from a PKCE client starts a flow too: fresh pkce_ links, the last one's code exchanges", () =>
    Effect.gen(function*() {
      const { client, email, url } = yield* signedIn("resend-pkce", "pkce")
      const newEmail = uniqueEmail("resend-pkce-new")
      expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
      expect((yield* call(() => client.resend({ type: "email_change", email: newEmail }))).error).toBeNull()
      const toNew = (yield* mailTo(newEmail)).at(-1)!
      const toCurrent = (yield* mailTo(email)).at(-1)!
      expect(yield* mailTo(newEmail)).toHaveLength(2)
      expect(linkIn(toNew).searchParams.get("token")).toMatch(/^pkce_/)
      expect((yield* follow(url, linkIn(toNew))).status).toBe(303)
      const { location } = yield* follow(url, linkIn(toCurrent))
      const exchanged = yield* call(() => client.exchangeCodeForSession(location.searchParams.get("code")!))
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.user).toMatchObject({ email: newEmail })
    }))
})
