/**
 * The sign-in metric (auth.sign_ins, by grant_type) counts every session a sign-in starts, wherever it starts: POST
 * /token (by its grant), /verify (`verify`: a typed code or a mailed link) and an external provider's callback
 * (`callback`). A PKCE flow's session is counted once, at the /token exchange; a refused attempt is not counted.
 */
import { afterAll, expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { GITHUB_CODE, githubEnv, startGitHubFake } from "../support/GitHubFake.js"
import { browser } from "../support/Browser.js"
import { acceptance, authClient, call, codeIn, linkIn, mailTo, PASSWORD, raw, signIns, uniqueEmail } from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"

const github = await startGitHubFake()
afterAll(() => github.close())

const memoryStorage = () => {
  const items = new Map<string, string>()
  return {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key)
  }
}

/** The counts of the sign-in metric for these grant types, now. */
const counts = (grantTypes: ReadonlyArray<string>) =>
  Effect.map(Effect.forEach(grantTypes, signIns), (values) => Object.fromEntries(grantTypes.map((type, i) => [type, values[i]!])))

/** What `test` added to the sign-in metric, by grant type. */
const counted = <A, E, R>(test: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const types = ["password", "pkce", "verify", "callback"]
    const before = yield* counts(types)
    const result = yield* test
    const after = yield* counts(types)
    return { result, added: Object.fromEntries(types.map((type) => [type, after[type]! - before[type]!])) }
  })

/** GET without following the redirect, as a browser's first hop. */
const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => new URL(response.headers.get("location") ?? ""))
  )

/** Signs up by email (implicit flow or PKCE) and returns the mailed code and link. */
const signedUp = (tag: string, flowType: "implicit" | "pkce" = "implicit") =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    const { client } = authClient(url, { flowType, persistSession: true, storage: memoryStorage() })
    expect((yield* call(() => client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: `${SITE_URL}/in` } }))).error).toBeNull()
    const [mail] = yield* mailTo(email)
    return { url, email, client, code: codeIn(mail!), link: linkIn(mail!) }
  })

acceptance({ ...githubEnv(github), AUTH_SMTP_MAX_FREQUENCY: "0" })("the sign-in metric", (it) => {
  it.effect("a session from POST /verify (a typed code) and from GET /verify (a link) counts as verify; a refused code does not", () =>
    Effect.gen(function*() {
      const typed = yield* signedUp("typed")
      const wrongCode = typed.code.slice(0, -1) + String((Number(typed.code.at(-1)) + 1) % 10)
      const refused = yield* counted(call(() => typed.client.verifyOtp({ email: typed.email, token: wrongCode, type: "signup" })))
      expect(refused.result.error).not.toBeNull()
      expect(refused.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 0 })
      const byCode = yield* counted(call(() => typed.client.verifyOtp({ email: typed.email, token: typed.code, type: "signup" })))
      expect(byCode.result.data.session).not.toBeNull()
      expect(byCode.added).toEqual({ password: 0, pkce: 0, verify: 1, callback: 0 })

      const linked = yield* signedUp("link")
      const byLink = yield* counted(follow(linked.url, linked.link))
      expect(new URLSearchParams(byLink.result.hash.slice(1)).get("access_token")).toBeTruthy()
      expect(byLink.added).toEqual({ password: 0, pkce: 0, verify: 1, callback: 0 })
      // The link is spent: following it again starts nothing.
      const again = yield* counted(follow(linked.url, linked.link))
      expect(again.result.hash).toContain("error_code=otp_expired")
      expect(again.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 0 })

      const password = yield* counted(raw(linked.url, "/token?grant_type=password", { body: { email: linked.email, password: PASSWORD } }))
      expect(password.result.status).toBe(200)
      expect(password.added).toEqual({ password: 1, pkce: 0, verify: 0, callback: 0 })
    }))

  it.effect("a PKCE link's session is counted once, as pkce at the exchange, not at /verify", () =>
    Effect.gen(function*() {
      const { client, link, url } = yield* signedUp("pkce-link", "pkce")
      const followed = yield* counted(follow(url, link))
      const code = followed.result.searchParams.get("code")
      expect(code).toMatch(/^[0-9a-f-]{36}$/)
      expect(followed.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 0 })
      const exchanged = yield* counted(call(() => client.exchangeCodeForSession(code!)))
      expect(exchanged.result.error).toBeNull()
      expect(exchanged.added).toEqual({ password: 0, pkce: 1, verify: 0, callback: 0 })
    }))

  it.effect("a session from the OAuth callback counts as callback; a PKCE callback's at the exchange, as pkce; a refused callback not at all", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      github.emails = [{ email: uniqueEmail("octo"), primary: true, verified: true, visibility: "public" }]
      const b = browser()
      const callbackWith = (client: ReturnType<typeof authClient>["client"], code: string) =>
        Effect.gen(function*() {
          const started = yield* call(() => client.signInWithOAuth({ provider: "github", options: { skipBrowserRedirect: true, redirectTo: `${SITE_URL}/in` } }))
          const toGitHub = yield* call(() => b.request(started.data.url!, { redirect: "manual" }))
          const state = new URL(toGitHub.headers.get("location")!).searchParams.get("state")!
          const back = yield* call(() => b.request(`${url}/callback?${new URLSearchParams({ code, state })}`, { redirect: "manual" }))
          return new URL(back.headers.get("location")!)
        })

      const implicit = yield* counted(callbackWith(authClient(url).client, GITHUB_CODE))
      expect(new URLSearchParams(implicit.result.hash.slice(1)).get("access_token")).toBeTruthy()
      expect(implicit.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 1 })

      // GitHub refuses the code: the browser gets the error, and nothing is counted.
      const refused = yield* counted(callbackWith(authClient(url).client, "not-the-code"))
      expect(new URLSearchParams(refused.result.hash.slice(1)).get("access_token")).toBeNull()
      expect(refused.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 0 })

      const { client } = authClient(url, { flowType: "pkce", persistSession: true, storage: memoryStorage() })
      const pkce = yield* counted(callbackWith(client, GITHUB_CODE))
      const code = pkce.result.searchParams.get("code")
      expect(code).toMatch(/^[0-9a-f-]{36}$/)
      expect(pkce.added).toEqual({ password: 0, pkce: 0, verify: 0, callback: 0 })
      const exchanged = yield* counted(call(() => client.exchangeCodeForSession(code!)))
      expect(exchanged.result.error).toBeNull()
      expect(exchanged.added).toEqual({ password: 0, pkce: 1, verify: 0, callback: 0 })
    }))
})
