import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { generateKeyPairSync } from "node:crypto"
import { type AddressInfo, connect, createServer, type Server } from "node:net"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { PGlite } from "@electric-sql/pglite"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Redacted, Scope } from "effect"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { readMigrations } from "../../src/platform/sql/Migrator.js"
import { TokenSigner, TokenSignerLive } from "../../src/platform/TokenSigner.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../support/TestDatabase.js"
import { signHs256, unsigned as unsignedJwt, withPayload } from "../auth/acceptance/AcceptanceKit.js"

// These tests run the built program the way an operator does; `npm test` builds it first.
const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))
const SECRET = "cli-test-jwt-secret-0123456789-abcdefghij"

interface Run {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

const start = (args: ReadonlyArray<string>, env: Record<string, string>, cwd: string): ChildProcess =>
  spawn(process.execPath, [MAIN, ...args], {
    cwd,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })

const finish = (child: ChildProcess): Promise<Run> =>
  new Promise((resolve) => {
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => (stdout += d))
    child.stderr!.on("data", (d) => (stderr += d))
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })

const run = (args: ReadonlyArray<string>, env: Record<string, string>, cwd: string) => finish(start(args, env, cwd))

/** Like run, but a process still running after `ms` is killed and reported with code null. */
const runWithin = async (ms: number, args: ReadonlyArray<string>, env: Record<string, string>, cwd: string) => {
  const child = start(args, env, cwd)
  const timer = setTimeout(() => child.kill("SIGKILL"), ms)
  const result = await finish(child)
  clearTimeout(timer)
  return { ...result, code: result.signal === null ? result.code : null }
}

const workDirs: Array<string> = []
const workDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-cli-"))
  workDirs.push(dir)
  return dir
}

/**
 * Production settings over a fresh database when the suite has a real PostgreSQL; otherwise the embedded default.
 * Servers listen on free ports (PORT=0 where a test starts one, and the IAM gRPC port here), so the suite runs
 * beside a Gatehouse started with `npm start`.
 */
let scope: Scope.CloseableScope
let databaseUrl: Option.Option<string> = Option.none()
beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error("dist/main.js is missing: run `npm run build` (npm test does)")
  scope = Effect.runSync(Scope.make())
  if (Option.isSome(externalDatabaseUrl)) {
    const fresh = await Effect.runPromise(Scope.extend(freshDatabaseUrl(externalDatabaseUrl.value), scope))
    databaseUrl = Option.some(fresh.url)
  }
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true })
})

const modeEnv = (dataDir: string): Record<string, string> =>
  Option.match(databaseUrl, {
    onNone: () => ({ AUTH_DATA_DIR: dataDir, AUTH_JWT_SECRET: SECRET, AUTH_IAM_GRPC_PORT: "0" }),
    onSome: (url) => ({
      DATABASE_URL: url,
      AUTH_IAM_GRPC_PORT: "0",
      AUTH_DB_DRIVER: "postgres",
      AUTH_SITE_URL: "http://localhost:3000",
      API_EXTERNAL_URL: "http://localhost:9999",
      AUTH_JWT_SECRET: SECRET,
      AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
      AUTH_SMTP_HOST: "127.0.0.1",
      AUTH_SMTP_PORT: "2525",
      DB_NAMESPACE: `cli_${Math.random().toString(36).slice(2, 8)}`
    })
  })

/**
 * Embedded data directories made once (by the first test that needs one) and copied into a test's directory:
 * copying takes milliseconds where PGlite's initdb takes seconds. "initialised" holds an empty database (initdb
 * done, nothing migrated), for the tests of commands that migrate; "migrated" has the migrations applied too, for
 * the tests about a server. Only "migrate … applies the migrations" starts from nothing, as a first start does.
 */
type Prepared = "initialised" | "migrated"
const templates = new Map<Prepared, Promise<string>>()
const template = (kind: Prepared): Promise<string> => {
  const made = templates.get(kind) ?? (async () => {
    const data = join(workDir(), "data")
    if (kind === "initialised") {
      mkdirSync(join(data, "pgdata"), { recursive: true })
      await (await PGlite.create(join(data, "pgdata"))).close()
    } else {
      cpSync(await template("initialised"), data, { recursive: true })
      const migrated = await run(["migrate"], { AUTH_DATA_DIR: data }, dirname(data))
      if (migrated.code !== 0) throw new Error(`migrate could not prepare the data directory: ${migrated.stderr}`)
    }
    return data
  })()
  templates.set(kind, made)
  return made
}
const dataDirIn = async (dir: string, kind: Prepared = "migrated"): Promise<string> => {
  const data = join(dir, "data")
  if (Option.isNone(databaseUrl)) cpSync(await template(kind), data, { recursive: true })
  return data
}

/** A port on 127.0.0.1 held by something else for the duration of `use`. */
const withPortTaken = async <A>(use: (port: number) => Promise<A>): Promise<A> => {
  const taken: Server = createServer()
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
  try {
    return await use((taken.address() as AddressInfo).port)
  } finally {
    taken.close()
  }
}

/** The versions recorded in the auth product's bookkeeping table, read straight from the database. */
const recordedVersions = async (env: Record<string, string>, dataDir: string): Promise<Array<number>> => {
  const table = `auth.${env["DB_NAMESPACE"] ? `${env["DB_NAMESPACE"]}_` : ""}gatehouse_migrations`
  if (env["DATABASE_URL"] !== undefined) {
    const query = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ version: number }>`SELECT version FROM ${sql(table)} ORDER BY version`)
    const rows = await Effect.runPromise(query.pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(env["DATABASE_URL"]), maxConnections: 1 }))
    ))
    return rows.map((r) => r.version)
  }
  const db = await PGlite.create(join(dataDir, "pgdata"))
  try {
    return (await db.query<{ version: number }>(`SELECT version FROM ${table} ORDER BY version`)).rows.map((r) => r.version)
  } finally {
    await db.close()
  }
}

const authVersions = readMigrations().filter((m) => m.product === "auth").map((m) => m.version)
const logLines = (text: string) =>
  text.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>)

/** A fresh IAM signing key, as `gatehouse iam generate-key` prints it. */
const generatedPaserk = (): string => {
  const out = execFileSync(process.execPath, [MAIN, "iam", "generate-key"], { encoding: "utf8" })
  const match = /k4\.secret\.[A-Za-z0-9_-]+/.exec(out)
  if (match === null) throw new Error(`generate-key printed no k4.secret key: ${out}`)
  return match[0]
}

/** The address a started server logs once it listens. */
const listeningUrl = (child: ChildProcess): Promise<string> =>
  new Promise<string>((resolve, reject) => {
    let seen = ""
    child.stdout!.on("data", (d) => {
      seen += d
      const match = /Listening on (http:\/\/[\d.]+:\d+)/.exec(seen)
      if (match) resolve(match[1]!)
    })
    child.on("close", () => reject(new Error(`exited before listening: ${seen}`)))
  })

describe("command line", () => {
  it("--help prints usage and exits 0", async () => {
    const result = await run(["--help"], {}, workDir())
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Usage:")
    expect(result.stdout).toContain("migrate")
  })

  it("an unknown command prints usage and exits 2", async () => {
    const result = await run(["frobnicate"], {}, workDir())
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("Unknown command: frobnicate")
    expect(result.stderr).toContain("Usage:")
  })

  it("a bad configuration prints one message naming every broken variable, no value and no stack, and exits 1", async () => {
    const leaked = "s3cr3t-value-that-must-not-print"
    const result = await run([], {
      DATABASE_URL: "postgres://gatehouse@127.0.0.1:1/none",
      AUTH_JWT_EXP: leaked,
      AUTH_SMTP_PASS: leaked,
      AUTH_EXTERNAL_GITHUB_ENABLED: "true"
    }, workDir())
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr.match(/Invalid configuration/g)).toHaveLength(1)
    for (const variable of ["AUTH_SITE_URL", "API_EXTERNAL_URL", "AUTH_JWT_SECRET", "AUTH_DB_DRIVER", "AUTH_SMTP_ADMIN_EMAIL",
      "AUTH_SMTP_HOST", "AUTH_SMTP_PORT", "AUTH_JWT_EXP", "AUTH_EXTERNAL_GITHUB_CLIENT_ID"]) {
      expect(result.stderr).toContain(variable)
    }
    expect(result.stderr).not.toContain(leaked)
    expect(result.stderr).not.toMatch(/\n\s+at /)
  })

  it("migrate needs only the database settings (no SMTP, JWT secret or URLs), applies the migrations, and a second run is a no-op", async () => {
    const dir = workDir()
    // The embedded default keeps its data in ./.gatehouse under the working directory.
    const env: Record<string, string> = Option.match(databaseUrl, {
      onNone: () => ({}),
      onSome: (url) => ({ DATABASE_URL: url, DB_NAMESPACE: `mig_${Math.random().toString(36).slice(2, 8)}` })
    })
    const first = await run(["migrate"], env, dir)
    expect(first.stderr).toBe("")
    expect(first.code).toBe(0)
    const said = logLines(first.stdout).map((l) => String(l["msg"]))
    expect(said.find((msg) => msg.startsWith("migrations:"))).toBe(`migrations: applied ${readMigrations().length}`)
    // A first start on the embedded database says what the seconds before the migrations are for.
    if (Option.isNone(databaseUrl)) {
      expect(said.indexOf("preparing the embedded database in .gatehouse/pgdata (first start only, a few seconds)…")).toBe(0)
    }
    const second = await run(["migrate"], env, dir)
    expect(second.code).toBe(0)
    expect(logLines(second.stdout).map((l) => l["msg"])).toContain("migrations: up to date")
    expect(logLines(second.stdout).map((l) => String(l["msg"])).some((msg) => msg.startsWith("preparing"))).toBe(false)
    expect(await recordedVersions(env, join(dir, ".gatehouse"))).toEqual(authVersions)
  })

  it("two migrate processes started together both exit 0 and apply each migration once", async () => {
    const dir = workDir()
    const env = modeEnv(await dataDirIn(dir, "initialised"))
    const [a, b] = await Promise.all([run(["migrate"], env, dir), run(["migrate"], env, dir)])
    expect([a.code, b.code]).toEqual([0, 0])
    const applied = [...logLines(a.stdout), ...logLines(b.stdout)]
      .flatMap((l) => (Array.isArray(l["migrations"]) ? l["migrations"] as Array<string> : []))
    expect(applied.sort()).toEqual(readMigrations().map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`).sort())
    expect(await recordedVersions(env, join(dir, "data"))).toEqual(authVersions)
  })

  it("serve answers /health, then shuts down cleanly on SIGTERM without printing the secret", async () => {
    const dir = workDir()
    const child = start([], { ...modeEnv(await dataDirIn(dir)), PORT: "0", API_HOST: "127.0.0.1" }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    const health = await fetch(`${url}/health`)
    expect(health.status).toBe(200)
    // A keep-alive connection left open must not hold the shutdown.
    const agentless = await fetch(`${url}/settings`, { keepalive: true })
    expect(agentless.status).toBe(200)
    child.kill("SIGTERM")
    const result = await done
    expect(result.code).toBe(0)
    expect(result.stdout + result.stderr).not.toContain(SECRET)
  })

  // The production build is a bundle (scripts/bundle.mjs): what the program imports on first use is a chunk of it or,
  // for some packages, node_modules. The rest of the suite runs src/; this runs each such part once from dist/.
  it("the production bundle loads what it imports on first use: the QR code, the API page, SAML", async () => {
    const dir = workDir()
    const samlKey = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "der", type: "pkcs1" }).toString("base64")
    const child = start([], {
      ...modeEnv(await dataDirIn(dir)),
      PORT: "0",
      API_HOST: "127.0.0.1",
      AUTH_MAILER_AUTOCONFIRM: "true",
      AUTH_SITE_URL: "http://localhost:3000",
      AUTH_SAML_ENABLED: "true",
      AUTH_SAML_PRIVATE_KEY: samlKey
    }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    const json = { "content-type": "application/json" }
    const signup = await fetch(`${url}/signup`, { method: "POST", headers: json, body: JSON.stringify({ email: "bundle@example.com", password: "bundle test password" }) })
    expect(signup.status).toBe(200)
    const bearer = { ...json, authorization: `Bearer ${((await signup.json()) as { access_token: string }).access_token}` }

    const totp = await fetch(`${url}/factors`, { method: "POST", headers: bearer, body: JSON.stringify({ factor_type: "totp" }) })
    const enrolled = (await totp.json()) as { totp?: { qr_code?: string } }
    expect([totp.status, enrolled.totp?.qr_code?.startsWith("<svg")]).toStrictEqual([200, true])

    const docs = await fetch(`${url}/docs`)
    expect([docs.status, (await docs.text()).includes("swagger")]).toStrictEqual([200, true])

    const metadata = await fetch(`${url}/sso/saml/metadata`)
    expect([metadata.status, (await metadata.text()).includes("X509Certificate")]).toStrictEqual([200, true])

    child.kill("SIGTERM")
    const result = await done
    expect(result.code).toBe(0)
    expect(result.stdout + result.stderr).not.toMatch(/could not load|ModuleLoadError/)
  })

  it("listens on API_HOST, spelt without a prefix, instead of the default host", async () => {
    const dir = workDir()
    // 127.0.0.2 is loopback too, and neither mode's default (127.0.0.1 embedded, 0.0.0.0 in production).
    const child = start([], { ...modeEnv(await dataDirIn(dir)), PORT: "0", API_HOST: "127.0.0.2" }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    expect(url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/)
    expect((await fetch(`${url}/health`)).status).toBe(200)
    const port = new URL(url).port
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow()
    child.kill("SIGTERM")
    expect((await done).code).toBe(0)
  })

  it("multi refuses requests the operator did not sign (all but /health), serves those it did, and needs OPERATOR_TOKEN", async () => {
    const dir = workDir()
    const env = { ...modeEnv(await dataDirIn(dir)), PORT: "0", API_HOST: "127.0.0.1", AUTH_API_ENDPOINT: "http://gatehouse.internal:8081" }
    const refused = await run(["multi"], env, dir)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("AUTH_OPERATOR_TOKEN: is required in multi-instance mode")

    const operatorToken = "operator-shared-secret-0123456789"
    const child = start(["multi"], { ...env, AUTH_OPERATOR_TOKEN: operatorToken }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    const now = Math.floor(Date.now() / 1000)
    const signed = signHs256({ exp: now + 60 }, operatorToken)
    expect((await fetch(`${url}/health`)).status).toBe(200)
    const missing = await fetch(`${url}/settings`)
    expect(missing.status).toBe(400)
    expect(await missing.json()).toMatchObject({ code: 400, error_code: "no_authorization", msg: "Operator microservice headers missing" })
    const forged = [
      signHs256({ exp: now + 60 }, "another-secret-0123456789-abcdef"),
      signHs256({ exp: now - 1 }, operatorToken),
      withPayload(signed, { exp: now + 3600 }),
      unsignedJwt({ exp: now + 60 })
    ]
    for (const bad of forged) {
      const answer = await fetch(`${url}/settings`, { headers: { "x-nf-sign": bad } })
      expect(answer.status).toBe(400)
      expect(await answer.json()).toMatchObject({ error_code: "bad_jwt", msg: "Operator microservice signature is invalid" })
    }
    expect((await fetch(`${url}/settings`, { headers: { "x-nf-sign": signed } })).status).toBe(200)
    expect((await fetch(`${url}/auth/v1/settings`, { headers: { "x-nf-sign": signed } })).status).toBe(200)
    child.kill("SIGTERM")
    const result = await done
    expect(result.code).toBe(0)
    expect(logLines(result.stdout).find((l) => String(l["msg"]).startsWith("multi-instance mode"))).toMatchObject({
      operator_endpoint: "http://gatehouse.internal:8081"
    })
    expect(result.stdout + result.stderr).not.toContain(operatorToken)
  })

  it("serve starts with phone sign-in on and an SMS provider missing its credentials, warning once by name", async () => {
    const dir = workDir()
    const child = start([], {
      ...modeEnv(await dataDirIn(dir)), PORT: "0", API_HOST: "127.0.0.1",
      AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_PROVIDER: "vonage", AUTH_SMS_VONAGE_API_KEY: "key",
      // Off on purpose: production without an IAM key would add its own warning.
      AUTH_IAM_ENABLED: "false"
    }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    const settings = await (await fetch(`${url}/settings`)).json() as { external: Record<string, boolean>; sms_provider: string }
    expect(settings.external["phone"]).toBe(true)
    expect(settings.sms_provider).toBe("vonage")
    child.kill("SIGTERM")
    const result = await done
    expect(result.code).toBe(0)
    const warnings = logLines(result.stdout).filter((line) => line["level"] === "warn")
    expect(warnings.map((line) => line["msg"])).toStrictEqual([
      "AUTH_SMS_PROVIDER is vonage but AUTH_SMS_VONAGE_API_SECRET, AUTH_SMS_VONAGE_FROM are not set: texts cannot be sent (SMS_TEST_OTP numbers still work)",
      // Production without RATE_LIMIT_HEADER says once that the per-IP limits are off; the embedded default does not.
      ...(Option.isSome(databaseUrl)
        ? ["AUTH_RATE_LIMIT_HEADER is not set: per-IP request rate limits (RATE_LIMIT_OTP, RATE_LIMIT_TOKEN_REFRESH, RATE_LIMIT_VERIFY, RATE_LIMIT_ANONYMOUS_USERS) are off"]
        : [])
    ])
  })

  it("a request in flight when SIGTERM arrives is answered before the process exits 0", async () => {
    const dir = workDir()
    const child = start([], { ...modeEnv(await dataDirIn(dir)), PORT: "0", API_HOST: "127.0.0.1", AUTH_MAILER_AUTOCONFIRM: "true" }, dir)
    const done = finish(child)
    const url = await listeningUrl(child)
    const { hostname, port } = new URL(url)
    const body = JSON.stringify({ email: "inflight@example.com", password: "in-flight-password" })
    const socket = connect(Number(port), hostname)
    let reply = ""
    socket.on("data", (d) => (reply += d))
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()))
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()))
    // Headers and half the body: the request is being handled, but cannot finish yet.
    socket.write(`POST /signup HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 10)}`)
    // The interim 100 Continue says the server has read the headers (in whichever worker process got the connection).
    await new Promise<void>((resolve) => socket.on("data", () => reply.includes("100 Continue") && resolve()))
    child.kill("SIGTERM")
    // write, not end: a client that half-closes its side makes Node abort the pending request (no allowHalfOpen).
    socket.write(body.slice(10))
    await closed
    expect(reply).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200/)
    expect(reply).toContain("\"access_token\"")
    expect((await done).code).toBe(0)
  })

  it("iam bootstrap-admin on a fresh database migrates, creates the admin (password from the environment), and can repeat", async () => {
    const dir = workDir()
    const env: Record<string, string> = { ...modeEnv(await dataDirIn(dir, "initialised")), AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD: "bootstrap-secret-pw" }
    if (env["DATABASE_URL"] !== undefined) env["AUTH_IAM_PASETO_SECRET_KEY"] = generatedPaserk()
    const first = await run(["iam", "bootstrap-admin", "--username", "root", "--email", "root@example.com"], env, dir)
    expect(first.stderr).toBe("")
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^created admin user \d+ /m)
    const again = await run(["iam", "bootstrap-admin", "--username", "root", "--email", "root@example.com"], env, dir)
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^updated admin user \d+ /m)
    expect(first.stdout + first.stderr + again.stdout + again.stderr).not.toContain("bootstrap-secret-pw")
  })

  it("iam bootstrap-admin with a bad password says so and exits 1 at once", async () => {
    const dir = workDir()
    const env: Record<string, string> = { ...modeEnv(join(dir, "data")), AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD: "short" }
    if (env["DATABASE_URL"] !== undefined) env["AUTH_IAM_PASETO_SECRET_KEY"] = generatedPaserk()
    const started = Date.now()
    const result = await runWithin(15_000, ["iam", "bootstrap-admin", "--username", "root", "--email", "root@example.com"], env, dir)
    expect(result.code).toBe(1)
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(result.stderr).toMatch(/^bootstrap-admin failed: .*password/m)
  })

  it("keys prints an anon and a service_role key signed with the secret the server uses, and nothing else on stdout", async () => {
    const dir = workDir()
    const dataDir = join(dir, "data")
    // The embedded default signs with the secret it generated in the data directory, so none is set here.
    const { AUTH_JWT_SECRET: _, ...embeddedEnv } = modeEnv(dataDir)
    const env = Option.isSome(databaseUrl) ? modeEnv(dataDir) : embeddedEnv
    const result = await run(["keys"], env, dir)
    expect(result.code).toBe(0)
    const match = /^anon key: (\S+)\nservice_role key: (\S+)\n$/.exec(result.stdout)
    expect(match).not.toBeNull()
    expect(result.stderr).toMatch(/secret/)
    const secret = Option.isSome(databaseUrl) ? SECRET : readFileSync(join(dataDir, "jwt-secret"), "utf8").trim()
    const verify = (token: string) =>
      Effect.runPromise(Effect.flatMap(TokenSigner, (signer) => signer.verify(token)).pipe(
        Effect.provide(TokenSignerLive({ secret: Redacted.make(secret) }))
      ))
    const [anon, serviceRole] = await Promise.all([verify(match![1]!), verify(match![2]!)])
    expect(anon.header.alg).toBe("HS256")
    expect(anon.payload).toMatchObject({ role: "anon", iss: Option.isSome(databaseUrl) ? "http://localhost:9999" : "http://localhost:8081" })
    expect(serviceRole.payload["role"]).toBe("service_role")
    expect(anon.payload).not.toHaveProperty("sub")
    expect(Number(anon.payload["exp"]) - Number(anon.payload["iat"])).toBeGreaterThan(9 * 365 * 24 * 3600)
  })

  it.skipIf(Option.isSome(externalDatabaseUrl))(
    "a second server or a command that needs the embedded database while a server holds it is refused at once",
    async () => {
      const dir = workDir()
      const data = await dataDirIn(dir)
      const env = { ...modeEnv(data), PORT: "0", API_HOST: "127.0.0.1" }
      const server = start([], env, dir)
      const stopped = finish(server)
      const url = await listeningUrl(server)
      const started = Date.now()
      const [migrated, bootstrapped, second] = await Promise.all([
        runWithin(15_000, ["migrate"], env, dir),
        runWithin(15_000, ["iam", "bootstrap-admin", "--username", "root", "--email", "root@example.com"],
          { ...env, AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD: "bootstrap-secret-pw" }, dir),
        runWithin(15_000, [], env, dir)
      ])
      expect(Date.now() - started).toBeLessThan(10_000)
      server.kill("SIGTERM")
      const first = await stopped
      expect(first.code).toBe(0)
      // The first server's banner came once it listened; the refused one prints the reason and no banner.
      expect(first.stderr).toContain(`listening on ${url}\n`)
      const refusal = `is in use by another Gatehouse process (pid ${server.pid}); stop it or set DATABASE_URL`
      expect(migrated.code).toBe(1)
      expect(migrated.stdout + migrated.stderr).toContain(refusal)
      expect(bootstrapped.code).toBe(1)
      expect(bootstrapped.stderr).toContain(refusal)
      expect(second.code).toBe(1)
      expect(logLines(second.stdout).filter((l) => l["level"] === "error").map((l) => l["msg"]))
        .toStrictEqual([`start-up failed: the embedded database in ${data} ${refusal}`])
      expect(second.stderr).toBe("")
    }
  )

  it("a port in use is named with the setting that moves it: PORT for HTTP, AUTH_IAM_GRPC_PORT for gRPC", async () => {
    const dir = workDir()
    const env: Record<string, string> = { ...modeEnv(await dataDirIn(dir)), AUTH_API_HOST: "127.0.0.1", AUTH_IAM_GRPC_HOST: "127.0.0.1" }
    // Production runs IAM only with a signing key; the embedded default makes one.
    if (env["DATABASE_URL"] !== undefined) env["AUTH_IAM_PASETO_SECRET_KEY"] = generatedPaserk()
    const errors = (result: Run) => logLines(result.stdout).filter((l) => l["level"] === "error").map((l) => l["msg"])
    const busy = "the port is in use (by another Gatehouse?): stop that process"
    await withPortTaken(async (port) => {
      const http = await runWithin(30_000, [], { ...env, PORT: String(port) }, dir)
      expect(http.code).toBe(1)
      expect(errors(http)).toStrictEqual([
        `start-up failed: could not listen on 127.0.0.1:${port}: ${busy}, or set PORT (or AUTH_API_PORT) to a free port`
      ])
      expect(http.stderr).not.toContain("listening on")
      const grpc = await runWithin(30_000, [], { ...env, PORT: "0", AUTH_IAM_GRPC_PORT: String(port) }, dir)
      expect(grpc.code).toBe(1)
      expect(errors(grpc)).toStrictEqual([
        `start-up failed: IAM gRPC could not listen on 127.0.0.1:${port}: ${busy}, or set AUTH_IAM_GRPC_PORT to a free port`
      ])
      expect(grpc.stderr).not.toContain("listening on")
    })
  })
})
