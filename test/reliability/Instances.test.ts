/**
 * Issue 15, "Several instances": two Gatehouse servers over one database. Already covered elsewhere, and not
 * repeated here:
 * - per-IP rate limits shared by two servers: test/auth/acceptance/RequestRateLimits.test.ts ("one client's bucket
 *   is shared by both servers"); the mail quota: SendQuotas.test.ts ("two servers over one database spend one mail
 *   quota between them");
 * - two `migrate` processes at once: test/cli/Cli.test.ts ("two migrate processes started together");
 * - IAM role and permission changes and revocations reaching a second instance: test/iam/Instances.test.ts;
 * - two connection pools racing one refresh token in the service: test/auth/sessions/RefreshConcurrency.test.ts.
 * Here: the same refresh token sent to both HTTP servers at once, OTP guesses spread over both, and two
 * `node dist/main.js serve` processes started together on a fresh PostgreSQL database.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it as plainIt } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { authTables } from "../../src/auth/AuthTables.js"
import { digestRefreshToken } from "../../src/auth/sessions/RefreshTokenCodec.js"
import { PlatformConfig } from "../../src/config/PlatformConfig.js"
import { readMigrations } from "../../src/platform/sql/Migrator.js"
import { acceptance, authClient, call, codeIn, mailTo, PASSWORD, raw, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../support/TestDatabase.js"
import { ServerUrl, TestServerOver } from "../support/TestServer.js"
import { recordFigure } from "./Figures.js"

const ENV = { AUTH_MAILER_AUTOCONFIRM: "true" }
const ROUNDS = 15
/** Requests per server per generation: the token goes to both servers this many times at once. */
const PER_SERVER = 3
const GENERATIONS = 3

interface TokenRow {
  readonly token: string
  readonly parent: string | null
  readonly revoked: boolean
}

acceptance(ENV)("two servers over one database", (it) => {
  it.scoped(`the same refresh token sent to both servers at once (${ROUNDS} sessions, ${GENERATIONS} generations): sessions or clean 4xx, one family, checked by SQL`, () =>
    Effect.gen(function*() {
      const first = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const t = authTables((yield* PlatformConfig).db.namespace)
      const second = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV))), ServerUrl)
      expect(second).not.toBe(first)

      let requests = 0
      const inconsistencies: Array<string> = []
      const refresh = (url: string, token: string) =>
        Effect.map(raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: token }, apiVersion: true }), (r) => {
          requests++
          return r
        })
      for (let round = 0; round < ROUNDS; round++) {
        const email = uniqueEmail("instances")
        const signUp = yield* raw(first, "/signup", { body: { email, password: PASSWORD } })
        expect(signUp.status).toBe(200)
        const sessionId: string = JSON.parse(Buffer.from(signUp.json.access_token.split(".")[1], "base64url").toString()).session_id
        const chain: Array<string> = [signUp.json.refresh_token]
        for (let generation = 0; generation < GENERATIONS; generation++) {
          const presented = chain[chain.length - 1]!
          const answers = yield* Effect.all(
            Array.from({ length: PER_SERVER * 2 }, (_, i) => refresh(i % 2 === 0 ? first : second, presented)),
            { concurrency: "unbounded" }
          )
          for (const answer of answers) {
            expect(answer.status, answer.text).toBeLessThan(500)
            if (answer.status !== 200) {
              // A clean refusal in GoTrue's envelope, never a half-made session.
              expect(answer.status).toBeGreaterThanOrEqual(400)
              expect(typeof answer.json?.code, answer.text).toBe("string")
            } else {
              expect(answer.json.user.email).toBe(email)
              expect(JSON.parse(Buffer.from(answer.json.access_token.split(".")[1], "base64url").toString()).session_id).toBe(sessionId)
            }
          }
          const children = new Set(answers.filter((a) => a.status === 200).map((a) => a.json.refresh_token as string))
          // Within the reuse interval every racer is handed the one child: more than one is a forked family.
          if (children.size !== 1) inconsistencies.push(`round ${round} generation ${generation}: ${children.size} children handed out`)
          if (children.size === 0) break
          chain.push([...children][0]!)
        }
        // The family by SQL: the presented tokens all revoked, each the parent of the next, one live token: the last.
        const rows = yield* sql<TokenRow>`
          SELECT token, parent, revoked FROM ${sql(t.refresh_tokens)} WHERE session_id = ${sessionId} ORDER BY id`
        const expected = chain.map((token, i) => ({
          token: digestRefreshToken(token),
          parent: i === 0 ? null : digestRefreshToken(chain[i - 1]!),
          revoked: i < chain.length - 1
        }))
        if (JSON.stringify(rows) !== JSON.stringify(expected)) {
          inconsistencies.push(`round ${round}: ${JSON.stringify(rows)} is not ${JSON.stringify(expected)}`)
        }
        // The last token still works, on either server.
        const last = yield* refresh(round % 2 === 0 ? second : first, chain[chain.length - 1]!)
        expect(last.status, last.text).toBe(200)
      }
      recordFigure("instances: refresh races across two servers", "requests", requests)
      recordFigure("instances: refresh races across two servers", "inconsistencies", inconsistencies.length)
      expect(inconsistencies).toEqual([])
    }))

  it.scoped("OTP guesses spread over both servers share one attempt limit: five wrong codes and the right one fails", () =>
    Effect.gen(function*() {
      const first = yield* ServerUrl
      const second = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV))), ServerUrl)
      let requests = 0
      // Mailed by the first server (its recorded mail); the guesses alternate, the right code goes to the second.
      const guess = (url: string, email: string, token: string) =>
        Effect.map(raw(url, "/verify", { body: { type: "magiclink", email, token }, apiVersion: true }), (r) => {
          requests++
          return r
        })
      for (const [label, wrongGuesses, works] of [["four wrong", 4, true], ["five wrong", 5, false]] as const) {
        const email = uniqueEmail("otp-brute")
        const admin = authClient(first).client
        expect((yield* call(() => admin.signUp({ email, password: PASSWORD }))).error).toBeNull()
        expect((yield* raw(first, "/otp", { body: { email, create_user: false } })).status).toBe(200)
        const mails = yield* mailTo(email)
        const code = codeIn(mails[mails.length - 1]!)
        for (let i = 0; i < wrongGuesses; i++) {
          const wrong = String((Number(code) + 1 + i) % 1_000_000).padStart(6, "0")
          const answer = yield* guess(i % 2 === 0 ? first : second, email, wrong)
          expect([answer.status, answer.json?.code], label).toEqual([403, "otp_expired"])
        }
        const right = yield* guess(second, email, code)
        expect(right.status, `${label}: ${right.text}`).toBe(works ? 200 : 403)
      }
      recordFigure("instances: OTP guesses across two servers", "requests", requests)
    }))
})

// ---------------------------------------------------------------------------------------------------------------
// Two `serve` processes started together on a fresh PostgreSQL database: both migrate, neither fails.
// ---------------------------------------------------------------------------------------------------------------

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))

const listening = (child: ChildProcess): Promise<{ url: string; output: () => string }> =>
  new Promise((resolve, reject) => {
    let seen = ""
    const output = () => seen
    child.stdout!.on("data", (d) => {
      seen += d
      const match = /Listening on (http:\/\/[\d.]+:\d+)/.exec(seen)
      if (match) resolve({ url: match[1]!, output })
    })
    child.stderr!.on("data", (d) => (seen += d))
    child.on("close", (code) => reject(new Error(`exited ${code} before listening: ${seen}`)))
  })

describe.skipIf(Option.isNone(externalDatabaseUrl))("a concurrent start on PostgreSQL", () => {
  plainIt.scoped("two servers started together on a fresh database both migrate it and serve; each migration is applied once", () =>
    Effect.gen(function*() {
      if (!existsSync(MAIN)) throw new Error("dist/main.js is missing: run `npm run build`")
      const { url: databaseUrl } = yield* freshDatabaseUrl(Option.getOrThrow(externalDatabaseUrl))
      const env = {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "",
        DATABASE_URL: databaseUrl,
        AUTH_DB_DRIVER: "postgres",
        PORT: "0",
        API_HOST: "127.0.0.1",
        AUTH_IAM_GRPC_PORT: "0",
        AUTH_SITE_URL: "http://localhost:3000",
        API_EXTERNAL_URL: "http://localhost:9999",
        AUTH_JWT_SECRET: "instances-test-jwt-secret-0123456789-abcdef",
        AUTH_MAILER_AUTOCONFIRM: "true",
        AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
        AUTH_SMTP_HOST: "127.0.0.1",
        AUTH_SMTP_PORT: "2525"
      }
      const children = yield* Effect.acquireRelease(
        Effect.sync(() => [0, 1].map(() => spawn(process.execPath, [MAIN], { env, stdio: ["ignore", "pipe", "pipe"] }))),
        (started) =>
          Effect.promise(() =>
            Promise.all(started.map((child) =>
              child.exitCode !== null || child.signalCode !== null
                ? Promise.resolve()
                : new Promise<void>((resolve) => {
                  child.on("close", () => resolve())
                  child.kill("SIGTERM")
                })))
          )
      )
      const servers = yield* call(() => Promise.all(children.map(listening)))
      for (const { url } of servers) expect((yield* raw(url, "/health")).status).toBe(200)

      // One database behind both: a user signed up through one signs in through the other.
      const email = uniqueEmail("concurrent-start")
      expect((yield* raw(servers[0]!.url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      expect((yield* raw(servers[1]!.url, "/token?grant_type=password", { body: { email, password: PASSWORD } })).status).toBe(200)

      const versions = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ version: number }>`SELECT version FROM auth.gatehouse_migrations ORDER BY version`).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
        Effect.orDie
      )
      expect(versions.map((v) => v.version)).toEqual(readMigrations().filter((m) => m.product === "auth").map((m) => m.version))
      // Between them the two logged every migration exactly once.
      const applied = servers.flatMap(({ output }) =>
        output().split("\n").filter((l) => l.startsWith("{")).flatMap((l) => {
          const line = JSON.parse(l) as Record<string, unknown>
          return Array.isArray(line["migrations"]) ? line["migrations"] as Array<string> : []
        }))
      expect(applied.sort()).toEqual(readMigrations().map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`).sort())
      recordFigure("instances: concurrent start", "requests", 4)
    }), 60_000)
})
