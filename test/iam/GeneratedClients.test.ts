import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { installGoTools, installPythonTools, PINNED, run } from "./support/CodegenTools.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

// Clients nobody here wrote, generated from proto/ as their users would: Go with buf + protoc-gen-go +
// protoc-gen-go-grpc (the README's buf.gen.yaml and main.go, as written), Python with grpcio-tools' protoc over every
// file in proto/. Each runs one flow against a real server. The tools are installed by the test at pinned versions
// (support/CodegenTools.ts) and cached under the OS temp dir; where one cannot be installed, its test skips and says
// why.

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const PROTO = join(ROOT, "proto")
const BUF = join(ROOT, "node_modules", ".bin", "buf")
const README = readFileSync(join(ROOT, "README.md"), "utf8")

/** The fenced block that follows `<!-- go-client:NAME … -->` in the README. */
const readmeBlock = (name: string): string => {
  const match = new RegExp(`<!-- go-client:${name.replace(".", "\\.")}[^>]*-->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(README)
  if (match === null) throw new Error(`README.md has no go-client:${name} block`)
  return match[1]!
}

const protoFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".proto")).sort()

/** A first run downloads and builds the tools (a few minutes on two cores); later runs find them cached. */
const INSTALL_TIMEOUT = 900_000

const scratch = (prefix: string) => mkdtempSync(join(tmpdir(), prefix))

layer(IamTestServer(), { timeout: 900_000 })("clients generated from proto/", (it) => {
  it.effect("proto/ holds only the IAM contract, which names its package for every generator", () =>
    Effect.sync(() => {
      expect(protoFiles(PROTO)).toEqual(["gatehouse/iam/v1/iam.proto"])
      const proto = readFileSync(join(PROTO, "gatehouse/iam/v1/iam.proto"), "utf8")
      for (const option of ["go_package", "java_package", "java_multiple_files", "csharp_namespace", "php_namespace", "ruby_package", "objc_class_prefix"]) {
        expect(proto).toMatch(new RegExp(`^option ${option} = `, "m"))
      }
      // The README's install line pins what this test installs.
      for (const pin of [
        `protoc-gen-go@${PINNED.protocGenGo}`, `protoc-gen-go-grpc@${PINNED.protocGenGoGrpc}`, `grpc@${PINNED.grpcGo}`,
        `protobuf@${PINNED.protocGenGo}`
      ]) expect(README).toContain(pin)
    }))

  it.effect("Go: buf generate with protoc-gen-go and protoc-gen-go-grpc, then the README's main.go signs up, calls and refreshes", (ctx) =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const tools = yield* Effect.promise(installGoTools)
      if (!tools.ok) {
        console.warn(`skipped: the Go client test needs Go tools that could not be installed: ${tools.why}`)
        return ctx.skip()
      }
      const { env } = tools.value
      const dir = scratch("gatehouse-go-client-")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      writeFileSync(join(dir, "buf.gen.yaml"), readmeBlock("buf.gen.yaml"))
      writeFileSync(join(dir, "main.go"), readmeBlock("main.go"))
      yield* Effect.promise(async () => {
        await run("go", ["mod", "init", "example.com/iamclient"], { cwd: dir, env })
        await run("go", ["get", `google.golang.org/grpc@${PINNED.grpcGo}`, `google.golang.org/protobuf@${PINNED.protocGenGo}`], {
          cwd: dir, env, timeoutMs: 600_000
        })
        await run(BUF, ["generate", PROTO], { cwd: dir, env: { ...env, BUF_CACHE_DIR: join(tools.value.dir, "buf") } })
        await run("go", ["mod", "tidy"], { cwd: dir, env, timeoutMs: 600_000 })
        await run("go", ["build", "-o", "iamclient", "."], { cwd: dir, env, timeoutMs: 600_000 })
      })
      expect(readdirSync(join(dir, "gen/gatehouse/iam/v1")).sort()).toEqual(["iam.pb.go", "iam_grpc.pb.go"])
      const client = (): Promise<string> =>
        run(join(dir, "iamclient"), [], { env: { ...process.env, IAM_ADDR: address }, timeoutMs: 60_000 }).then((r) => r.stdout)
      // First run: Register. Second run: the name is taken, so Login.
      for (const _ of [1, 2]) {
        const output = yield* Effect.promise(client)
        expect(output).toMatch(/^signed in as ada \(user \d+\) with 0 role\(s\)\nrefreshed: new access token for \d+ s\n$/)
      }
    }).pipe(Effect.scoped), INSTALL_TIMEOUT)

  it.effect("Python: grpcio-tools' protoc over all of proto/, imported beside grpcio-health-checking and grpcio-reflection", (ctx) =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const tools = yield* Effect.promise(installPythonTools)
      if (!tools.ok) {
        console.warn(`skipped: the Python client test needs tools that could not be installed: ${tools.why}`)
        return ctx.skip()
      }
      const { python } = tools.value
      const dir = scratch("gatehouse-py-client-")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const out = join(dir, "gen")
      mkdirSync(out)
      const seen = yield* Effect.promise(async () => {
        await run(python, ["-m", "grpc_tools.protoc", `-I${PROTO}`, `--python_out=${out}`, `--grpc_python_out=${out}`, ...protoFiles(PROTO)], {
          cwd: dir
        })
        const flow = fileURLToPath(new URL("./clients/python_flow.py", import.meta.url))
        return JSON.parse((await run(python, [flow, address, out, "py-client"], { cwd: dir, timeoutMs: 60_000 })).stdout)
      })
      expect(seen).toEqual({
        modules: ["gatehouse.iam.v1.iam_pb2", "gatehouse.iam.v1.iam_pb2_grpc"],
        health: "SERVING",
        me: { valid: true, username: "py-client", same_user: true, roles: 0 },
        refreshed: { valid: true, new_refresh_token: true },
        reflected_file: "gatehouse.iam.v1",
        reflected_methods: [
          "Register", "Login", "Logout", "GenerateToken", "RefreshToken", "ValidateToken",
          "LoginSecondStep", "EnrollTotp", "VerifyTotpEnrollment", "RemoveTotp", "StartOAuthSignIn", "FinishOAuthSignIn"
        ]
      })
    }).pipe(Effect.scoped), INSTALL_TIMEOUT)
})
