/**
 * proto/'s promise (iam.proto's header: "gatehouse.iam.v1 only ever grows"), checked rather than asserted: buf's
 * breaking-change rules (FILE, the strictest: wire, JSON and generated source) compare proto/ with a copy of the
 * contract as first released (test/iam/fixtures/proto-v1-first-release, iam.proto at 12ac0c1, before two-step
 * verification and OAuth2 sign-in), so a client generated then keeps compiling and working against today's server.
 * A copy with one field renumbered is refused by the same check: it can fail.
 */
import { execFile } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"

const ROOT = join(import.meta.dirname, "..", "..")
const BUF = join(ROOT, "node_modules", ".bin", "buf")
const FIRST_RELEASE = join(ROOT, "test", "iam", "fixtures", "proto-v1-first-release")
const CONFIG = JSON.stringify({ version: "v2", breaking: { use: ["FILE"] } })

const breaking = (input: string) =>
  promisify(execFile)(BUF, ["breaking", input, "--against", FIRST_RELEASE, "--config", CONFIG], { cwd: ROOT }).then(
    () => ({ code: 0, out: "" }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? -1, out: `${error.stdout ?? ""}${error.stderr ?? ""}` })
  )

const scratch = mkdtempSync(join(tmpdir(), "gatehouse-proto-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe("the IAM contract only grows", () => {
  it("proto/ has no breaking change against the first release", async () => {
    expect(await breaking(join(ROOT, "proto"))).toStrictEqual({ code: 0, out: "" })
  }, 60_000)

  it("a renumbered field is a breaking change the check names", async () => {
    const copy = join(scratch, "renumbered")
    cpSync(join(ROOT, "proto"), copy, { recursive: true })
    const file = join(copy, "gatehouse", "iam", "v1", "iam.proto")
    const source = readFileSync(file, "utf8")
    const changed = source.replace(/(message RegisterRequest \{[^}]*?string username = )1;/, "$19;")
    expect(changed).not.toBe(source)
    writeFileSync(file, changed)
    const result = await breaking(copy)
    expect(result.code).not.toBe(0)
    expect(result.out).toContain(`Previously present field "1" with name "username" on message "RegisterRequest" was deleted`)
  }, 60_000)
})
