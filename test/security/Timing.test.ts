/**
 * Issue 22, enumeration by timing: /signup and /recover answer in the same time for an address with a confirmed
 * account, one with an unconfirmed account, and one with none. GoTrue's answers differ by tens of milliseconds (a
 * new sign-up pays for bcrypt and a mail, a duplicate pays for neither). Here every sign-up pays for one hash, and
 * the mails go out after the answer. The answers themselves stay GoTrue's.
 *
 * The server has real bcrypt, since that is where most of the gap came from, at cost 8 (about 15 ms here): enough that
 * a branch without its hash would stand out threefold, with less of cost 10's spread under load. The requests of
 * each round go in a shuffled order, and the kinds are compared round by round (see race).
 */
import { randomInt } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { BcryptPasswordHasher } from "../../src/platform/PasswordHasher.js"
import { adminJwt, PASSWORD, raw, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { ServerUrl, TestServer } from "../support/TestServer.js"

const ROUNDS = 80
/**
 * Rounds first sent and not measured: a new server (its JIT, the database's caches) gets faster over its first
 * requests, and the durations the padding draws from lag behind that, so the first rounds would measure the warm-up.
 */
const WARM_UP = 20
const TOLERANCE_MS = 5

// With an SMTP host set, as in production, mail is only recorded (the test servers send none): the embedded default's
// outbox would also write each mail to the database after the answer, work production never does.
const env = { AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_SMTP_HOST: "smtp.invalid" }

const RealBcrypt = TestServer(env, { passwordHasher: BcryptPasswordHasher({ cost: 8 }) }).pipe(
  Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
)

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const shuffled = <A>(items: ReadonlyArray<A>): Array<A> => {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomInt(0, i + 1)
    ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
  }
  return copy
}

/** Milliseconds one request took, from the client's side, and its status. */
const timed = (url: string, path: string, body: unknown) =>
  Effect.gen(function*() {
    const start = performance.now()
    const answer = yield* raw(url, path, { body, apiVersion: true })
    return { ms: performance.now() - start, status: answer.status, json: answer.json }
  })

const adminCreate = (url: string, email: string, confirmed: boolean) =>
  Effect.map(raw(url, "/admin/users", { body: { email, password: PASSWORD, email_confirm: confirmed }, bearer: adminJwt() }), (answer) => {
    expect(answer.status).toBe(200)
  })

/**
 * Runs each kind of request once per round, in a new order each round. What it measures of two kinds is the median,
 * over the rounds, of the difference between their requests of one round: the load of the machine, which drifts
 * over seconds (other processes, the garbage collector), is the same for the requests of one round and cancels out,
 * where it would move each kind's own median by as much as the gap being looked for. Each kind's median is reported
 * beside it.
 */
const race = <K extends string>(kinds: ReadonlyArray<K>, request: (kind: K, round: number) => ReturnType<typeof timed>) =>
  Effect.gen(function*() {
    const times = Object.fromEntries(kinds.map((kind) => [kind, [] as Array<number>])) as Record<K, Array<number>>
    const answers = Object.fromEntries(kinds.map((kind) => [kind, new Set<number>()])) as Record<K, Set<number>>
    for (let round = 0; round < WARM_UP + ROUNDS; round++) {
      for (const kind of shuffled(kinds)) {
        const { ms, status } = yield* request(kind, round)
        answers[kind].add(status)
        if (round >= WARM_UP) times[kind].push(ms)
      }
    }
    const gaps = kinds.flatMap((a, i) =>
      kinds.slice(i + 1).map((b) => ({ between: `${a} - ${b}`, ms: median(times[a].map((ms, round) => ms - times[b][round]!)) }))
    )
    const medians = Object.fromEntries(kinds.map((kind) => [kind, median(times[kind])]))
    return { answers, gaps, report: JSON.stringify({ medians, gaps }) }
  })

describe("timing", () => {
  layer(RealBcrypt, { timeout: 240_000, excludeTestServices: true })("with real bcrypt", (it) => {
    it.effect("/signup: a confirmed, an unconfirmed and an unknown address take the same time, and get GoTrue's answers", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const confirmed = Array.from({ length: WARM_UP + ROUNDS }, () => uniqueEmail("t-confirmed"))
        const unconfirmed = Array.from({ length: WARM_UP + ROUNDS }, () => uniqueEmail("t-unconfirmed"))
        for (const email of confirmed) yield* adminCreate(url, email, true)
        for (const email of unconfirmed) yield* adminCreate(url, email, false)
        const addresses = { confirmed, unconfirmed, unknown: Array.from({ length: WARM_UP + ROUNDS }, () => uniqueEmail("t-unknown")) }
        const { answers, gaps, report } = yield* race(["confirmed", "unconfirmed", "unknown"] as const, (kind, round) =>
          timed(url, "/signup", { email: addresses[kind][round], password: PASSWORD }))
        // GoTrue's answers, with confirmation required: a user for each, the confirmed one a faux user.
        expect(answers).toEqual({ confirmed: new Set([200]), unconfirmed: new Set([200]), unknown: new Set([200]) })
        for (const gap of gaps) expect(Math.abs(gap.ms), report).toBeLessThan(TOLERANCE_MS)
      }))

    it.effect("/recover: an address with an account and one without take the same time, and both get {}", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const known = Array.from({ length: WARM_UP + ROUNDS }, () => uniqueEmail("t-known"))
        for (const email of known) yield* adminCreate(url, email, true)
        const addresses = { known, unknown: Array.from({ length: WARM_UP + ROUNDS }, () => uniqueEmail("t-nobody")) }
        const { answers, gaps, report } = yield* race(["known", "unknown"] as const, (kind, round) =>
          timed(url, "/recover", { email: addresses[kind][round] }))
        expect(answers).toEqual({ known: new Set([200]), unknown: new Set([200]) })
        for (const gap of gaps) expect(Math.abs(gap.ms), report).toBeLessThan(TOLERANCE_MS)
      }))
  })
})
