/**
 * What the acceptance tests share: a Gatehouse server per file, the real @supabase/auth-js client pointed at
 * it, raw fetch for what a client cannot express, and the few primitives an attacker would use (hand-made
 * JWTs). Nothing here knows Gatehouse's internals except the recorded mail and the database.
 */
import { createHmac, randomInt, randomUUID, type KeyObject } from "node:crypto"
import { AuthClient, type GoTrueClientOptions } from "@supabase/auth-js"
import { layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Metric, Ref, Schedule } from "effect"
import { AuthMessages } from "../../../src/auth/messages/AuthMessages.js"
import { AuthMetrics } from "../../../src/auth/metrics/AuthMetrics.js"
import { type Mail, SentMail } from "../../../src/platform/mail/Mailer.js"
import { baseTestEnv, RefusedMail, TestServer } from "../../support/TestServer.js"

/**
 * Whether the running test makes the server fail on purpose (see `expectingErrors`). Module state because the
 * server's fibers do not see the test's: each test file has its own copy of this module, and runs one test at a time.
 */
let errorsExpected = false

const unlessExpected = Logger.make<unknown, void>((options) => {
  if (!errorsExpected) Logger.defaultLogger.log(options)
})

/**
 * A real server on a real clock (tokens must not be born expired on TestClock's epoch 0), logging only errors, so
 * a 5xx shows up while the warnings the tests provoke (a provider refusing a code, a request without the
 * rate-limit header) stay out of the output.
 */
export const acceptanceServer = (env: Readonly<Record<string, string>>) =>
  TestServer(env).pipe(
    Layer.provide(Logger.replace(Logger.defaultLogger, unlessExpected)),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Error))
  )

/**
 * Runs a test that makes the server fail on purpose (a mail or SMS outage it turns on): what the server logs
 * meanwhile is the test's subject, which its assertions check, not news for the output.
 */
export const expectingErrors = <A, E, R>(test: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      errorsExpected = true
    }),
    () => test,
    () =>
      Effect.sync(() => {
        errorsExpected = false
      })
  )

export const acceptance = (env: Readonly<Record<string, string>>) =>
  layer(acceptanceServer(env), { timeout: 120_000, excludeTestServices: true })

/** Runs a client call; a rejected promise fails the test with its own error. */
export const call = <A>(thunk: () => Promise<A>): Effect.Effect<A> => Effect.promise(thunk)

/** Posts a form to the SAML ACS as a browser does (the HTTP-POST binding), without following the redirect. */
export const postAcs = (url: string, fields: Record<string, string>) =>
  call(async () => {
    const response = await fetch(`${url}/sso/saml/acs`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual"
    })
    return { status: response.status, location: response.headers.get("location") ?? "", text: await response.text() }
  })

/** The password every test user gets unless a test needs another; it satisfies the strictest policy used here. */
export const PASSWORD = "Corr3ct-Horse-Battery"

export const uniqueEmail = (tag: string): string => `${tag}-${randomUUID().slice(0, 8)}@example.com`

/** A fresh E.164 number, as a client types it (with "+"). */
export const uniquePhone = (): string => `+1555${String(randomInt(0, 10_000_000)).padStart(7, "0")}`

export interface RecordedRequest {
  readonly method: string
  readonly path: string
}

/**
 * auth-js as an app configures it on a server (no timers, no storage), with every request it sends recorded so a
 * test can tell which endpoint a method used (getClaims: /user or /.well-known/jwks.json).
 */
export const authClient = (url: string, options: Partial<GoTrueClientOptions> = {}) => {
  const requests: Array<RecordedRequest> = []
  const client = new AuthClient({
    url,
    autoRefreshToken: false,
    persistSession: false,
    fetch: (input, init) => {
      const target = new URL(input instanceof Request ? input.url : String(input))
      requests.push({ method: init?.method ?? "GET", path: target.pathname })
      return fetch(input, init)
    },
    ...options
  })
  return { client, requests }
}

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  readonly json: any
}

export interface RawRequest {
  readonly method?: string
  readonly headers?: Record<string, string>
  /** A string is sent as is; anything else is JSON-encoded. */
  readonly body?: unknown
  /** Sends X-Supabase-Api-Version: 2024-01-01, as auth-js does; without it the legacy envelope is expected. */
  readonly apiVersion?: boolean
  readonly bearer?: string
}

/** One request with fetch, as a hand-written client or an attacker would send it. */
export const raw = (url: string, path: string, options: RawRequest = {}): Effect.Effect<RawResponse> =>
  call(async () => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json"
    if (options.apiVersion === true) headers["x-supabase-api-version"] = "2024-01-01"
    if (options.bearer !== undefined) headers["authorization"] = `Bearer ${options.bearer}`
    const response = await fetch(`${url}${path}`, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers,
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) })
    })
    const text = await response.text()
    let json: unknown = undefined
    try {
      json = text === "" ? undefined : JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  })

/** The GoTrue error envelope a request without an API version gets: `{code: status, error_code, msg}`. */
export const legacyError = (status: number, code: string, msg: string) => ({ code: status, error_code: code, msg })

/** The envelope for X-Supabase-Api-Version 2024-01-01: `{code, message}`. */
export const versionedError = (code: string, message: string) => ({ code, message })

/**
 * How many requests a limit has refused so far, as the metrics exporter reads it (`limit`: otp, token_refresh,
 * email_sent, …). The servers of a test file run in its process, so a test compares the count before and after.
 */
export const refusals = (limit: string): Effect.Effect<number> =>
  Effect.map(Metric.value(Metric.tagged(AuthMetrics.rateLimited, "limit", limit)), (state) => state.count)

/** How many sign-ins the metric has counted so far with this `grant_type` (password, pkce, verify, callback, …). */
export const signIns = (grantType: string): Effect.Effect<number> =>
  Effect.map(Metric.value(Metric.tagged(AuthMetrics.signIns, "grant_type", grantType)), (state) => state.count)

/** Mail recorded by the server's MemoryMailer, oldest first. */
export const sentMail: Effect.Effect<ReadonlyArray<Mail>, never, SentMail> = Effect.flatMap(SentMail, ({ mails }) => Ref.get(mails))

export const mailTo = (address: string) => Effect.map(sentMail, (mails) => mails.filter((mail) => mail.to === address))

/**
 * Waits until every mail the server posted (sign-up confirmations, recovery and magic links go out after the answer)
 * was delivered, or failed and gave its send window and quota back.
 */
export const settledMail: Effect.Effect<void, never, AuthMessages> = Effect.flatMap(AuthMessages, (messages) => messages.settled)

/**
 * Waits until the mail outage has refused `count` mails to `address`. A sign-up confirmation, a recovery or a magic
 * link goes out after the answer, so its failure comes after it too.
 */
export const refusedMailTo = (address: string, count = 1) =>
  Effect.flatMap(RefusedMail, (refused) =>
    Ref.get(refused).pipe(
      Effect.map((to) => to.filter((recipient) => recipient === address).length),
      Effect.repeat({ until: (n) => n >= count, schedule: Schedule.spaced("10 millis") }),
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(`no mail to ${address} was refused`) }),
      Effect.orDie
    ))

/** The one-time code a built-in mail body carries. */
export const codeIn = (mail: Mail): string => {
  const match = /Code: (\d+)/.exec(mail.text ?? "")
  if (match === null) throw new Error(`no code in mail "${mail.subject}"`)
  return match[1]!
}

/** The action link a built-in mail body carries. */
export const linkIn = (mail: Mail): URL => {
  const match = /(https?:\/\/\S+)/.exec(mail.text ?? "")
  if (match === null) throw new Error(`no link in mail "${mail.subject}"`)
  return new URL(match[1]!)
}

const segment = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url")

export interface DecodedJwt {
  readonly header: Record<string, unknown>
  readonly payload: Record<string, any>
}

export const decodeJwt = (token: string): DecodedJwt => {
  const [header, payload] = token.split(".")
  return {
    header: JSON.parse(Buffer.from(header!, "base64url").toString("utf8")),
    payload: JSON.parse(Buffer.from(payload!, "base64url").toString("utf8"))
  }
}

/** An HS256 JWT made by hand with any key: the server's secret, a wrong one, or a public key's bytes. */
export const signHs256 = (
  payload: Record<string, unknown>,
  key: string | Buffer | KeyObject,
  header: Record<string, unknown> = { alg: "HS256", typ: "JWT" }
): string => {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`
}

/** An unsigned token (`alg: none`) carrying the given claims. */
export const unsigned = (payload: Record<string, unknown>): string => `${segment({ alg: "none", typ: "JWT" })}.${segment(payload)}.`

/** The same token with its payload replaced and the original signature kept. */
export const withPayload = (token: string, payload: Record<string, unknown>): string => {
  const [header, , signature] = token.split(".")
  return `${header}.${segment(payload)}.${signature}`
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** A JWT with an admin role signed with the test servers' secret, shaped like the keys `gatehouse keys` prints. */
export const adminJwt = (role = "service_role", claims: Record<string, unknown> = {}): string =>
  signHs256({ iss: "supabase", role, iat: nowSeconds(), exp: nowSeconds() + 3600, ...claims }, baseTestEnv["AUTH_JWT_SECRET"]!)
