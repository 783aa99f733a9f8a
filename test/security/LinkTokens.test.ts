/**
 * Issue 22, attack 1: taking an account over by brute-forcing a link. GoTrue's link token is sha224(address +
 * 6-digit code), so anyone who knows the address computes all 10^6 candidates offline, and a wrong hash is never
 * counted. Here a link token is 224 random bits, independent of the code; GoTrue's form is taken only for a token
 * GoTrue itself wrote before the switch, and only until it expires; and a client's guessable attempts are limited,
 * with or without RATE_LIMIT_HEADER. Each attack runs through a real server (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  codeIn,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  type RawResponse,
  uniqueEmail
} from "../auth/acceptance/AcceptanceKit.js"

/** What an attacker who knows the address and guessed the code right would send as GoTrue's link. */
const gotrueForm = (address: string, code: string) => createHash("sha224").update(address + code).digest("hex")

/** The 56 hex characters of a candidate that is not the right one. */
const wrongHash = (i: number) => createHash("sha224").update(`wrong-${i}`).digest("hex")

/** The burst of guesses a client has (RATE_LIMIT_VERIFY_GUESSES's, 30, as by default). */
const GUESSES = 30

/**
 * The test servers raise the guess limit for every other file. These set it back, with a refill of one guess per
 * 100 s instead of the default's one per 10 s, so that no guess comes back while a test runs.
 */
const GUESS_LIMIT = { AUTH_RATE_LIMIT_VERIFY_GUESSES: "3", AUTH_RATE_LIMIT_VERIFY: "100000" }

const verifyHash = (url: string, type: string, tokenHash: string, client: string) =>
  raw(url, "/verify", { body: { type, token_hash: tokenHash }, apiVersion: true, headers: { "x-client-ip": client } })

const confirmedUser = (url: string, tag: string) =>
  Effect.gen(function*() {
    const email = uniqueEmail(tag)
    const created = yield* raw(url, "/admin/users", { body: { email, password: PASSWORD, email_confirm: true }, bearer: adminJwt() })
    expect(created.status).toBe(200)
    return { email, id: created.json.id as string }
  })

/** The last mail to `email`: its code, and its link's token. */
const lastMail = (email: string) =>
  Effect.map(mailTo(email), (mails) => {
    const mail = mails.at(-1)!
    return { code: codeIn(mail), link: linkIn(mail).searchParams.get("token")! }
  })

const statuses = (answers: ReadonlyArray<RawResponse>) =>
  answers.reduce<Record<number, number>>((count, answer) => ({ ...count, [answer.status]: (count[answer.status] ?? 0) + 1 }), {})

acceptance({ ...GUESS_LIMIT, AUTH_RATE_LIMIT_HEADER: "X-Client-IP", AUTH_SMTP_MAX_FREQUENCY: "0" })("link tokens cannot be brute-forced", (it) => {
  it.effect("a mailed link carries 224 random bits: not the code's GoTrue hash, and different each time", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email } = yield* confirmedUser(url, "shape")
      expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
      const first = yield* lastMail(email)
      expect(first.link).toMatch(/^[0-9a-f]{56}$/)
      expect(first.link).not.toBe(gotrueForm(email, first.code))
      // RECOVERY_MIN_INTERVAL keeps a second recovery mail a minute away; a magic link shares the token.
      const generated = yield* raw(url, "/admin/generate_link", { body: { type: "magiclink", email }, bearer: adminJwt() })
      expect(generated.json.hashed_token).toMatch(/^[0-9a-f]{56}$/)
      expect(generated.json.hashed_token).not.toBe(first.link)
      expect(generated.json.hashed_token).not.toBe(gotrueForm(email, generated.json.email_otp))
    }))

  it.effect("1,000 wrong hashes, then the right sha224 form: nothing gets in, and the victim's own link still works", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const victim = yield* confirmedUser(url, "victim")
      expect((yield* raw(url, "/recover", { body: { email: victim.email } })).status).toBe(200)
      const mailed = yield* lastMail(victim.email)

      const answers: Array<RawResponse> = []
      for (let i = 0; i < 1000; i++) answers.push(yield* verifyHash(url, "recovery", wrongHash(i), "attacker"))
      const counted = statuses(answers)
      // The first GUESSES are each refused as wrong; after them the client may not guess at all.
      expect(counted).toEqual({ 403: GUESSES, 429: 1000 - GUESSES })
      expect(answers.at(-1)!.headers.get("retry-after")).toMatch(/^\d+$/)

      // The attacker guessed the code offline and sends GoTrue's form of the link, from a fresh client: refused,
      // because this server never takes GoTrue's form for a token it issued itself.
      const right = yield* verifyHash(url, "recovery", gotrueForm(victim.email, mailed.code), "attacker-2")
      expect([right.status, right.json?.code]).toEqual([403, "otp_expired"])

      // The victim, behind the attacker's address even, follows the mailed link: a random token is never charged.
      const followed = yield* call(() =>
        fetch(`${url}/verify?token=${mailed.link}&type=recovery`, { redirect: "manual", headers: { "x-client-ip": "attacker" } }))
      expect(followed.status).toBe(303)
      expect(new URL(followed.headers.get("location")!).hash).toContain("access_token=")
      // Spent: the same link again is refused.
      const again = yield* verifyHash(url, "recovery", mailed.link, "victim")
      expect([again.status, again.json?.code]).toEqual([403, "otp_expired"])
    }))

  it.effect("a client's typed codes count against the same limit, and the per-user counter still ends a code after five misses", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email } = yield* confirmedUser(url, "codes")
      expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
      const { code } = yield* lastMail(email)
      const wrong = code.slice(0, -1) + String((Number(code.at(-1)) + 1) % 10)
      const typed = (token: string, client: string) =>
        raw(url, "/verify", { body: { type: "recovery", email, token }, apiVersion: true, headers: { "x-client-ip": client } })
      for (let i = 0; i < 5; i++) expect((yield* typed(wrong, `spray-${i}`)).status).toBe(403)
      // Five misses from five clients spent the code for everyone.
      expect([(yield* typed(code, "owner")).status]).toEqual([403])
      for (let i = 0; i < GUESSES; i++) yield* typed("000000", "sprayer")
      const limited = yield* typed("000000", "sprayer")
      expect([limited.status, limited.json?.code]).toEqual([429, "over_request_rate_limit"])
    }))

  it.effect("the sha224 form is refused for every kind of link: sign-up, magic link, email change (an address the attacker does not own)", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      // Sign-up: the victim's own pending confirmation.
      const signedUp = uniqueEmail("signup")
      expect((yield* raw(url, "/signup", { body: { email: signedUp, password: PASSWORD } })).status).toBe(200)
      const confirmation = yield* lastMail(signedUp)
      expect((yield* verifyHash(url, "signup", gotrueForm(signedUp, confirmation.code), "kinds")).status).toBe(403)

      // Magic link.
      const { email } = yield* confirmedUser(url, "magic")
      expect((yield* raw(url, "/magiclink", { body: { email } })).status).toBe(200)
      const magic = yield* lastMail(email)
      expect((yield* verifyHash(url, "magiclink", gotrueForm(email, magic.code), "kinds")).status).toBe(403)

      // Email change: the attacker asks for the victim's address on their own account; the code goes to the victim.
      const attacker = yield* confirmedUser(url, "attacker")
      const { client } = authClient(url)
      expect((yield* call(() => client.signInWithPassword({ email: attacker.email, password: PASSWORD }))).error).toBeNull()
      const victimAddress = uniqueEmail("not-theirs")
      expect((yield* call(() => client.updateUser({ email: victimAddress }))).error).toBeNull()
      const toVictim = yield* lastMail(victimAddress)
      const toAttacker = yield* lastMail(attacker.email)
      expect((yield* verifyHash(url, "email_change", toAttacker.link, "kinds")).status).toBe(200)
      const forged = yield* verifyHash(url, "email_change", gotrueForm(victimAddress, toVictim.code), "kinds")
      expect([forged.status, forged.json?.code]).toEqual([403, "otp_expired"])
      const { data } = yield* call(() => client.getUser())
      expect(data.user?.email).toBe(attacker.email)
      // Only the victim's own link applies the change.
      expect((yield* verifyHash(url, "email_change", toVictim.link, "kinds")).status).toBe(200)
    }))

  it.effect("GoTrue's form works only for a token GoTrue wrote before this database issued links, and only until it expires", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const [{ applied_at: since }] = yield* sql<{ applied_at: Date }>`SELECT applied_at FROM auth.gatehouse_migrations WHERE version = 11`
      // What GoTrue leaves behind: the code's hash in the users column, sent before the switch, and no row of ours.
      const gotruePending = (tag: string, sentAt: Date) =>
        Effect.gen(function*() {
          const { email, id } = yield* confirmedUser(url, tag)
          const hash = gotrueForm(email, "123456")
          yield* sql`UPDATE auth.users SET recovery_token = ${hash}, recovery_sent_at = ${sentAt} WHERE id = ${id}`
          return hash
        })
      const beforeSwitch = yield* gotruePending("legacy", new Date(since.getTime() - 60_000))
      const expired = yield* gotruePending("legacy-expired", new Date(since.getTime() - 25 * 3600_000))
      const afterSwitch = yield* gotruePending("legacy-late", new Date(since.getTime() + 1000))
      expect((yield* verifyHash(url, "recovery", expired, "legacy")).status).toBe(403)
      expect((yield* verifyHash(url, "recovery", afterSwitch, "legacy")).status).toBe(403)
      const taken = yield* verifyHash(url, "recovery", beforeSwitch, "legacy")
      expect(taken.status).toBe(200)
      expect(typeof taken.json.access_token).toBe("string")
      // Single use, as any link.
      expect((yield* verifyHash(url, "recovery", beforeSwitch, "legacy")).status).toBe(403)
    }))
})

acceptance(GUESS_LIMIT)(
  "without RATE_LIMIT_HEADER guesses are still limited, by the connection's address",
  (it) => {
    it.effect("a header the client writes does not buy new guesses", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const answers: Array<RawResponse> = []
        for (let i = 0; i < GUESSES + 5; i++) {
          answers.push(yield* raw(url, "/verify", {
            body: { type: "magiclink", token_hash: wrongHash(i) },
            apiVersion: true,
            headers: { "x-forwarded-for": `198.51.100.${i}`, "x-client-ip": `198.51.100.${i}` }
          }))
        }
        expect(statuses(answers)).toEqual({ 403: GUESSES, 429: 5 })
      }))
  }
)
