#!/usr/bin/env node
/**
 * `npm run test:contract`: Schemathesis against a throwaway server, checking that /openapi.json describes exactly
 * what the server does.
 *
 * 1. Installs Schemathesis (pinned below) from PyPI into .venv-contract (git-ignored) unless that version is there.
 *    When PyPI cannot be reached this fails, loudly: a contract run that did not run is not a pass.
 * 2. Builds dist/ if stale, starts a throwaway PostgreSQL 15 (scripts/pg.sh), a local SMTP sink that accepts every
 *    mail, and the server as production runs it (`node dist/main.js`, DATABASE_URL set, the IAM service on), with
 *    MAILER_AUTOCONFIRM so a sign-up answers a session, and manual linking on.
 * 3. Makes the credentials: a real user's access token (sign-up), the service_role key (`node dist/main.js keys`),
 *    an IAM user's and the IAM admin's tokens (register, bootstrap-admin, login); and a user in each product whose
 *    fresh sessions the logouts end instead of the run's own (scripts/contract_hooks.py), so that those stay valid.
 * 4. Runs `schemathesis run` with every check over every phase (examples, coverage, fuzzing, stateful) twice: as the
 *    user and as service_role. The document's `x-refuses-well-formed` statuses (GoTrue's 400/422 for a well-formed
 *    request it refuses for its data) become the positive-data check's expected statuses for that operation, and
 *    nothing else is relaxed.
 * 5. Prints each run's summary and exits non-zero when either reported a failure or an error.
 *
 * CONTRACT_MAX_EXAMPLES (default 25) and CONTRACT_MAX_TIME (seconds per run, default 200) bound the runs for CI;
 * CONTRACT_SEED fixes the seed. Reports go to .contract/ (git-ignored): the JUnit XML and the output of each run.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { generateKeyPairSync } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { SMTPServer } from "smtp-server"

const SCHEMATHESIS_VERSION = "4.32.5"
const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const venv = join(root, ".venv-contract")
const schemathesis = join(venv, "bin", "schemathesis")
const reports = join(root, ".contract")
const maxExamples = process.env.CONTRACT_MAX_EXAMPLES ?? "25"
const maxTime = process.env.CONTRACT_MAX_TIME ?? "200"
const started = Date.now()

const say = (line) => process.stdout.write(`contract: ${line}\n`)
const fail = (line) => {
  process.stderr.write(`\ncontract: FAILED: ${line}\n`)
  process.exitCode = 1
}

/** Schemathesis at the pinned version in .venv-contract, from PyPI. */
const installSchemathesis = () => {
  const installed = spawnSync(schemathesis, ["--version"], { encoding: "utf8" })
  if (installed.status === 0 && installed.stdout.includes(`version ${SCHEMATHESIS_VERSION}`)) return
  say(`installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into .venv-contract`)
  rmSync(venv, { recursive: true, force: true })
  const steps = [
    ["python3", ["-m", "venv", venv]],
    [join(venv, "bin", "pip"), ["install", "--quiet", `schemathesis==${SCHEMATHESIS_VERSION}`]]
  ]
  for (const [command, args] of steps) {
    const run = spawnSync(command, args, { stdio: "inherit" })
    if (run.status !== 0) {
      throw new Error(
        `could not install schemathesis ${SCHEMATHESIS_VERSION} (${command} ${args.join(" ")} exited ${run.status}): ` +
          "PyPI must be reachable for the contract test; it was not skipped"
      )
    }
  }
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/**
 * Every mail the server sends is accepted and dropped: the contract is about the HTTP answers. The sink parses
 * addresses leniently: strict, smtp-server refuses any address over 253 octets, shorter than the 255 that GoTrue (and
 * so Gatehouse) accepts and RFC 5321's 254, and the server's answer to an address the mail server refuses (500, as
 * GoTrue's) says nothing about the contract.
 */
const startSmtpSink = async () => {
  const server = new SMTPServer({
    authOptional: true,
    lenientAddressParsing: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData: (stream, _session, callback) => {
      stream.resume()
      stream.on("end", () => callback())
    }
  })
  const port = await freePort()
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { port, close: () => new Promise((resolve) => server.close(resolve)) }
}

const startPostgres = (dir) => {
  const started = spawnSync("bash", [join(root, "scripts", "pg.sh"), "start", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
  const line = /^DATABASE_URL=(\S+)$/m.exec(started.stdout ?? "")
  if (started.status !== 0 || line === null) throw new Error("could not start PostgreSQL 15 (scripts/pg.sh)")
  return line[1]
}

/**
 * One setup request, on a connection of its own: fetch would reuse a kept-alive connection, and one the server
 * closes as idle (while a CLI step runs) can be reused at that very moment ("other side closed").
 */
const request = (base, method, path, body, headers = {}) =>
  new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = httpRequest(`${base}${path}`, {
      method,
      agent: false,
      headers: { "content-type": "application/json", ...(payload === undefined ? {} : { "content-length": Buffer.byteLength(payload) }), ...headers }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => {
        if (response.statusCode < 200 || response.statusCode >= 300) reject(new Error(`${method} ${path}: ${response.statusCode} ${text}`))
        else resolve(text === "" ? {} : JSON.parse(text))
      })
      response.on("error", reject)
    })
    req.on("error", reject)
    req.end(payload)
  })

const waitForHealth = async (base, server) => {
  for (let i = 0; i < 600; i++) {
    if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode} before it answered`)
    try {
      if ((await fetch(`${base}/health`)).ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("the server did not answer /health within 60 s")
}

const DEFAULT_ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]

/** The Schemathesis configuration: one run's credentials and, per operation, the statuses the document lists. */
const configFor = (document, credentials) => {
  const lines = [
    `hooks = ${JSON.stringify(join(root, "scripts", "contract_hooks.py"))}`,
    "",
    ...Object.entries(credentials).flatMap(([scheme, token]) => [`[auth.openapi.${scheme}]`, `bearer = ${JSON.stringify(token)}`, ""])
  ]
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const refused = operation?.["x-refuses-well-formed"]
      if (!Array.isArray(refused) || refused.length === 0) continue
      lines.push(
        "[[operations]]",
        `include-operation-id = ${JSON.stringify(operation.operationId)}`,
        `checks.positive_data_acceptance.expected-statuses = ${JSON.stringify([...DEFAULT_ACCEPTED, ...refused.map(String)])}`,
        ""
      )
    }
  }
  // DELETE /admin/users/{id} with should_soft_delete keeps the user, obfuscated, and GET /admin/users/{id} still
  // answers it, as GoTrue's does (its loadUser does not look at deleted_at): Schemathesis' use-after-free check
  // (ST301) expects a 404 there. A hard delete answering 404 is tested in test/auth/acceptance/AdminUsers.test.ts.
  lines.push("[[operations]]", `include-operation-id = "adminUsers.getUser"`, "checks.use_after_free.enabled = false", "")
  return lines.join("\n")
}

const runSchemathesis = (name, base, configPath, hookEnv) =>
  new Promise((resolve) => {
    const args = [
      "--config-file", configPath,
      "run", `${base}/openapi.json`,
      "--url", base,
      "--checks", "all",
      "--phases", "examples,coverage,fuzzing,stateful",
      "--max-examples", maxExamples,
      "--max-time", maxTime,
      "--workers", "2",
      "--generation-database", "none",
      "--no-color",
      "--report", "junit",
      "--report-junit-path", join(reports, `${name}.junit.xml`),
      ...(process.env.CONTRACT_SEED === undefined ? [] : ["--seed", process.env.CONTRACT_SEED])
    ]
    say(`schemathesis ${args.join(" ")}`)
    const child = spawn(schemathesis, args, { cwd: reports, env: { ...process.env, ...hookEnv }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code) => {
      writeFileSync(join(reports, `${name}.txt`), output)
      resolve({ code, output })
    })
  })

/**
 * Schemathesis' closing banner ("=== 1 failure, 4 warnings in 200.03s ===") reworded as "1 failure, 4 warnings; 200.03 s
 * of Schemathesis", with neither the banner nor "in Ns": CI reads that shape as pytest's closing line, whose counts
 * here would say no test ran (the tests Schemathesis ran are counted from its JUnit report by ci-tally).
 */
const schemathesisSummary = (output) => {
  const banner = output.split("\n").findLast((line) => /=+ .* in [\d.]+s =+/.test(line))
  if (banner === undefined) return "(no summary line)"
  const [, counts, seconds] = /=+ (.*) in ([\d.]+)s =+/.exec(banner)
  return `${counts}; ${seconds} s of Schemathesis`
}

const work = mkdtempSync(join(tmpdir(), "gatehouse-contract-"))
let server
let smtp
let pgStarted = false
try {
  installSchemathesis()
  mkdirSync(reports, { recursive: true })
  execFileSync(process.execPath, [join(root, "scripts", "build-if-stale.mjs")], { cwd: root, stdio: "inherit" })

  const databaseUrl = startPostgres(join(work, "pg"))
  pgStarted = true
  smtp = await startSmtpSink()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const iamKey = /^AUTH_IAM_PASETO_SECRET_KEY=(\S+)$/m.exec(
    execFileSync(process.execPath, [join(root, "dist", "main.js"), "iam", "generate-key"], { encoding: "utf8" })
  )[1]
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    AUTH_DB_DRIVER: "postgres",
    PORT: String(port),
    AUTH_API_HOST: "127.0.0.1",
    // The IAM gRPC port is not under test here: loopback, on a port the system picks, so it never takes 50051 from
    // a server someone is running.
    AUTH_IAM_GRPC_HOST: "127.0.0.1",
    AUTH_IAM_GRPC_PORT: "0",
    API_EXTERNAL_URL: base,
    // The server itself, so the landing page at / is served and described too.
    AUTH_SITE_URL: base,
    AUTH_JWT_SECRET: "contract-test-secret-that-is-at-least-32-bytes-long",
    AUTH_SMTP_HOST: "127.0.0.1",
    AUTH_SMTP_PORT: String(smtp.port),
    AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
    AUTH_MAILER_AUTOCONFIRM: "true",
    AUTH_SECURITY_MANUAL_LINKING_ENABLED: "true",
    AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true",
    AUTH_SMTP_MAX_FREQUENCY: "1s",
    AUTH_RATE_LIMIT_EMAIL_SENT: "1000000",
    // Every second factor and passkeys on, so their routes are exercised rather than answering "disabled".
    AUTH_MFA_PHONE_ENROLL_ENABLED: "true",
    AUTH_MFA_PHONE_VERIFY_ENABLED: "true",
    AUTH_MFA_WEB_AUTHN_ENROLL_ENABLED: "true",
    AUTH_MFA_WEB_AUTHN_VERIFY_ENABLED: "true",
    AUTH_PASSKEY_ENABLED: "true",
    AUTH_WEBAUTHN_RP_ID: "localhost",
    AUTH_WEBAUTHN_RP_ORIGINS: "http://localhost:3000",
    AUTH_IAM_PASETO_SECRET_KEY: iamKey,
    AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD: "contract admin password",
    // Issue 29's sign-ins, on so that their routes answer rather than 404 feature_disabled: the OAuth 2.1 server
    // (with an ES256 key, for ID tokens), SAML (a throwaway RSA key, as GoTrue reads it) and Web3.
    AUTH_JWT_KEYS: JSON.stringify([{ ...generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" }), kid: "contract-es256", alg: "ES256", key_ops: ["sign", "verify"] }]),
    AUTH_OAUTH_SERVER_ENABLED: "true",
    AUTH_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: "true",
    AUTH_OAUTH_SERVER_AUTHORIZATION_PATH: "/consent",
    AUTH_SAML_ENABLED: "true",
    AUTH_SAML_PRIVATE_KEY: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "der", type: "pkcs1" }).toString("base64"),
    AUTH_EXTERNAL_WEB3_ETHEREUM_ENABLED: "true",
    AUTH_EXTERNAL_WEB3_SOLANA_ENABLED: "true",
    AUTH_WORKERS: "1",
    LOG_LEVEL: "error"
  }
  const main = join(root, "dist", "main.js")
  server = spawn(process.execPath, [main], { cwd: work, env, stdio: ["ignore", "ignore", "inherit"] })
  await waitForHealth(base, server)
  say(`server on ${base} (PostgreSQL, IAM on)`)

  const password = "contract user password"
  const session = await request(base, "POST", "/signup", { email: "contract-user@example.com", password })
  const userToken = session.access_token
  const serviceRole = /^service_role key: (\S+)$/m.exec(execFileSync(process.execPath, [main, "keys"], { env, encoding: "utf8" }))[1]
  execFileSync(process.execPath, [main, "iam", "bootstrap-admin", "--username", "contract-admin", "--email", "contract-admin@example.com"], {
    env,
    stdio: ["ignore", "ignore", "inherit"]
  })
  const iamLogin = async (username, secret) =>
    (await request(base, "POST", "/auth/login", { username, password: secret })).token.access_token
  const iamAdmin = await iamLogin("contract-admin", env.AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD)
  await request(base, "POST", "/auth/register", { username: "contract-user", password, email: "contract-iam-user@example.com" })
  const iamUser = await iamLogin("contract-user", password)
  // The user whose sessions the logouts end (scripts/contract_hooks.py), in both products.
  const logout = { email: "contract-logout@example.com", username: "contract-logout", password }
  await request(base, "POST", "/signup", { email: logout.email, password })
  await request(base, "POST", "/auth/register", { username: logout.username, password, email: "contract-iam-logout@example.com" })

  const document = await request(base, "GET", "/openapi.json")
  const runs = [
    { name: "user", credentials: { bearer: userToken, serviceRole: userToken, iamBearer: iamUser } },
    { name: "service_role", credentials: { bearer: serviceRole, serviceRole, iamBearer: iamAdmin } }
  ]
  const results = []
  for (const run of runs) {
    const configPath = join(work, `${run.name}.toml`)
    writeFileSync(configPath, configFor(document, run.credentials))
    say(`run as ${run.name}`)
    const result = await runSchemathesis(run.name, base, configPath, {
      CONTRACT_BASE_URL: base,
      CONTRACT_PROTECTED_TOKENS: Object.values(run.credentials).join(","),
      CONTRACT_LOGOUT_EMAIL: logout.email,
      CONTRACT_LOGOUT_USERNAME: logout.username,
      CONTRACT_LOGOUT_PASSWORD: logout.password
    })
    const summary = schemathesisSummary(result.output)
    results.push({ ...run, ...result, summary })
    // On success only the reworded summary is printed: Schemathesis' own closing banner has pytest's shape
    // ("=== 4 warnings in 200.03s ==="), and CI reads such a line as a pytest run that executed no test.
    say(`${run.name}: ${summary}`)
    if (result.code !== 0) process.stdout.write(`${result.output}\n`)
  }
  say(`took ${Math.round((Date.now() - started) / 1000)} s; output in .contract/`)
  for (const result of results) say(`${result.name}: ${result.summary}`)
  const failed = results.filter((result) => result.code !== 0)
  if (failed.length > 0) fail(`schemathesis reported failures as ${failed.map((r) => r.name).join(" and ")}`)
} catch (error) {
  fail(error instanceof Error ? `${error.message}${error.cause === undefined ? "" : ` (${error.cause})`}` : String(error))
} finally {
  if (server !== undefined && server.exitCode === null) {
    server.kill("SIGTERM")
    await new Promise((resolve) => server.once("exit", resolve))
  }
  await smtp?.close()
  if (pgStarted) spawnSync("bash", [join(root, "scripts", "pg.sh"), "stop", join(work, "pg")], { stdio: "inherit" })
  if (existsSync(work)) rmSync(work, { recursive: true, force: true })
}
