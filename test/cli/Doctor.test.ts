/**
 * `doctor` run as an operator runs it (dist/main.js): over GoTrue's fixture after Gatehouse's migrations (PostgreSQL
 * only, psql loads the fixture) and over a database only Gatehouse ever used (PGlite without DATABASE_URL).
 */
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import { deriveRefreshToken, digestRefreshToken, refreshTokenKey } from "../../src/auth/sessions/RefreshTokenCodec.js"
import { gotrueFixtureMissing, gotrueManifest, loadGoTrueFixture } from "../support/GoTrueFixture.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../support/TestDatabase.js"

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))
const PSQL = join(process.env["PG_BIN"] ?? "/usr/lib/postgresql/15/bin", "psql")

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>, cwd: string): Promise<Run> =>
  new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, env: { PATH: process.env["PATH"] ?? "", ...env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
  })

const psql = (url: string, statement: string): Promise<void> =>
  new Promise((resolve, reject) =>
    execFile(PSQL, [url, "-v", "ON_ERROR_STOP=1", "-qc", statement], (error) => (error === null ? resolve() : reject(error))))

/**
 * The server's settings in production, as the operator has them: export-sessions needs them (it derives the keys from
 * the JWT secret). Unused by the embedded default, which fills its own.
 */
const serverSettings = (jwtSecret: string): Record<string, string> => ({
  AUTH_DB_DRIVER: "postgres",
  AUTH_SITE_URL: "https://app.example.com",
  API_EXTERNAL_URL: "https://auth.example.com",
  AUTH_JWT_SECRET: jwtSecret,
  AUTH_SMTP_ADMIN_EMAIL: "noreply@example.com",
  AUTH_SMTP_HOST: "127.0.0.1",
  AUTH_SMTP_PORT: "2525",
  AUTH_IAM_ENABLED: "false"
})

let scope: Scope.CloseableScope
const dirs: Array<string> = []
const workDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-doctor-"))
  dirs.push(dir)
  return dir
}
beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error("dist/main.js is missing: run `npm run build` (npm test does)")
  scope = Effect.runSync(Scope.make())
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe("doctor", () => {
  it.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)(
    "over GoTrue's database after Gatehouse's migrations: exit 0; a NULL where GoTrue scans a string: exit 1, counted",
    async () => {
      const { url } = await Effect.runPromise(Scope.extend(loadGoTrueFixture(Option.getOrThrow(externalDatabaseUrl)), scope))
      const cwd = workDir()
      expect((await run(["migrate"], { DATABASE_URL: url }, cwd)).code).toBe(0)
      const clean = await run(["doctor"], { DATABASE_URL: url }, cwd)
      expect(clean.code, clean.stdout + clean.stderr).toBe(0)
      expect(clean.stdout.trim().split("\n").at(-1)).toMatch(/^doctor: GoTrue v2\.196 can read every row/)

      await psql(url, "UPDATE auth.users SET confirmation_token = NULL WHERE id IN (SELECT id FROM auth.users ORDER BY id LIMIT 2)")
      await psql(url, "UPDATE auth.flow_state SET provider_access_token = NULL")
      const broken = await run(["doctor"], { DATABASE_URL: url }, cwd)
      expect(broken.code).toBe(1)
      const lines = broken.stdout.trim().split("\n")
      expect(lines).toContain("FAIL users.confirmation_token: 2 row(s) hold NULL (string: GoTrue writes \"\" for none, and NULL fails the scan)")
      expect(lines.at(-1)).toMatch(/^doctor: \d+ problem\(s\) GoTrue v2\.196 cannot read past/)
      // Only counts: no row's value (an address, a hash) is ever printed.
      expect(broken.stdout).not.toMatch(/@|\$2a\$/)
    },
    120_000
  )

  it.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)(
    "export-sessions: a session on a Gatehouse refresh token is doctor's note until export-sessions writes its key; exit 0, counted",
    async () => {
      const { url } = await Effect.runPromise(Scope.extend(loadGoTrueFixture(Option.getOrThrow(externalDatabaseUrl)), scope))
      const cwd = workDir()
      const secret = gotrueManifest.jwt_secret
      const env = { DATABASE_URL: url, ...serverSettings(secret) }
      expect((await run(["migrate"], env, cwd)).code).toBe(0)
      // phone_user's session, rotated once at Gatehouse: its GoTrue token revoked, a Gatehouse token current.
      const session = "(SELECT session_id FROM auth.refresh_tokens WHERE token = '" + gotrueManifest.users.phone_user.refresh_token + "')"
      const sessionId = await new Promise<string>((resolve, reject) =>
        execFile(PSQL, [url, "-XAtc", `SELECT ${session}::text`], (error, stdout) => (error === null ? resolve(stdout.trim()) : reject(error))))
      const digest = digestRefreshToken(deriveRefreshToken(refreshTokenKey(secret), sessionId, "900001"))
      await psql(url, `UPDATE auth.refresh_tokens SET revoked = true WHERE session_id = '${sessionId}';
        INSERT INTO auth.refresh_tokens (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
        VALUES ('00000000-0000-0000-0000-000000000000', 900001, '${digest}', '${gotrueManifest.users.phone_user.id}', false,
          now(), now(), '${gotrueManifest.users.phone_user.refresh_token}', '${sessionId}')`)

      const before = await run(["doctor"], env, cwd)
      expect(before.code, before.stdout + before.stderr).toBe(0)
      expect(before.stdout).toContain("NOTE sessions: 1 live session(s) hold a Gatehouse refresh token GoTrue cannot exchange until `export-sessions` runs")

      const exported = await run(["export-sessions"], env, cwd)
      expect(exported.code, exported.stdout + exported.stderr).toBe(0)
      expect(exported.stdout).toMatch(/^export-sessions: 1 live session\(s\) can now be refreshed by GoTrue \(key and counter written\); [1-9]\d* hold GoTrue's own tokens already; 0 hold a token of Gatehouse's first form/)
      // The key is written to the database, never printed.
      expect(exported.stdout + exported.stderr).not.toContain(refreshTokenKey(secret).toString("base64url").slice(0, 12))

      const after = await run(["doctor"], env, cwd)
      expect(after.code).toBe(0)
      expect(after.stdout).not.toContain("NOTE sessions")
      expect(after.stdout.trim().split("\n").at(-1)).toBe("doctor: GoTrue v2.196 can read every row (0 note(s))")
    },
    120_000
  )

  it("over a database only Gatehouse used: doctor exits 1, GoTrue never ran there, and export-sessions refuses", async () => {
    const cwd = workDir()
    const env: Record<string, string> = Option.isSome(externalDatabaseUrl)
      ? { DATABASE_URL: (await Effect.runPromise(Scope.extend(freshDatabaseUrl(externalDatabaseUrl.value), scope))).url }
      : { AUTH_DATA_DIR: join(cwd, "data") }
    expect((await run(["migrate"], env, cwd)).code).toBe(0)
    const result = await run(["doctor"], env, cwd)
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("FAIL schema_migrations: GoTrue never ran on this database")
    // Nothing to switch back to: export-sessions writes no key there.
    const exported = await run(["export-sessions"], { ...env, ...serverSettings("a-secret-for-this-test-of-32-bytes-or-more") }, cwd)
    expect(exported.code).toBe(1)
    expect(exported.stderr).toContain("export-sessions: GoTrue never ran on this database (no auth.schema_migrations)")
  }, 120_000)
})
