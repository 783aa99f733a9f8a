import { execFile } from "node:child_process"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * The code generators a client of the IAM service would use, at pinned versions, installed by the test itself into
 * a cache under the OS temp dir keyed by those versions: the first run downloads them (Go module proxy, PyPI), later
 * runs find them there. buf is the repository's own devDependency (@bufbuild/buf, pinned in package-lock.json).
 */
export const PINNED = {
  protocGenGo: "v1.36.11",
  protocGenGoGrpc: "v1.6.1",
  grpcGo: "v1.80.0",
  grpcioTools: "1.85.1",
  grpcioHealthChecking: "1.85.1",
  grpcioReflection: "1.85.1"
} as const

const CACHE = join(tmpdir(), "gatehouse-codegen-tools")

export interface Run {
  readonly stdout: string
  readonly stderr: string
}

/** A command that must succeed, with its output on failure; bounded by `timeoutMs`. */
export const run = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number } = {}
): Promise<Run> =>
  new Promise((resolve, reject) => {
    execFile(file, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      timeout: options.timeoutMs ?? 300_000,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => {
      if (error === null) resolve({ stdout, stderr })
      else reject(new Error(`${file} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`.slice(0, 8000)))
    })
  })

/**
 * Whether a failed install failed for want of the network (no registry to fetch from), which is a reason to skip;
 * any other failure (a wrong version, a build error) fails the test.
 */
const unreachable = (error: unknown): boolean =>
  /dial tcp|no such host|connection refused|i\/o timeout|network is unreachable|TLS handshake|NewConnectionError|Temporary failure in name resolution|No matching distribution found|Could not find a version/i
    .test(String(error))

/** Whether `file --version`-like probing finds the program at all. */
const found = (file: string, args: ReadonlyArray<string>): Promise<boolean> =>
  run(file, args, { timeoutMs: 30_000 }).then(() => true, () => false)

/** Where the Go toolchain is: on PATH, or where the official tarball installs it (not on every shell's PATH). */
const GO_HOMES = ["", "/usr/local/go/bin", "/usr/lib/go/bin"]

/**
 * The environment the Go toolchain runs in: module and build caches inside the versioned cache, no toolchain
 * downloads, the installed plugins and `go` itself on PATH.
 */
export const goEnv = (dir: string, goHome: string): NodeJS.ProcessEnv => ({
  ...process.env,
  GOBIN: join(dir, "bin"),
  GOMODCACHE: join(dir, "mod"),
  GOCACHE: join(dir, "build"),
  GOFLAGS: "-modcacherw",
  GOTOOLCHAIN: "local",
  PATH: [join(dir, "bin"), ...(goHome === "" ? [] : [goHome]), process.env["PATH"] ?? ""].join(":")
})

export type Installed<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly why: string }

/**
 * protoc-gen-go and protoc-gen-go-grpc in `<cache>/go-…/bin`, with the module and build caches beside them. Not
 * installed (with the reason) when there is no Go toolchain or `go install` cannot fetch the modules.
 */
export const installGoTools = async (): Promise<Installed<{ readonly dir: string; readonly env: NodeJS.ProcessEnv }>> => {
  let goHome: string | undefined
  for (const home of GO_HOMES) {
    if (goHome === undefined && await found(home === "" ? "go" : join(home, "go"), ["version"])) goHome = home
  }
  if (goHome === undefined) return { ok: false, why: "no Go toolchain (`go` on PATH or in /usr/local/go/bin)" }
  const dir = join(CACHE, `go-protoc-gen-go-${PINNED.protocGenGo}-grpc-${PINNED.protocGenGoGrpc}-grpc-go-${PINNED.grpcGo}`)
  const env = goEnv(dir, goHome)
  const marker = join(dir, ".installed")
  if (!existsSync(marker)) {
    mkdirSync(dir, { recursive: true })
    try {
      for (const tool of [
        `google.golang.org/protobuf/cmd/protoc-gen-go@${PINNED.protocGenGo}`,
        `google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PINNED.protocGenGoGrpc}`
      ]) await run("go", ["install", tool], { env, cwd: dir, timeoutMs: 600_000 })
    } catch (error) {
      if (!unreachable(error)) throw error
      return { ok: false, why: `go install could not fetch protoc-gen-go ${PINNED.protocGenGo} / protoc-gen-go-grpc ${PINNED.protocGenGoGrpc}: ${String(error)}` }
    }
    writeFileSync(marker, new Date().toISOString())
  }
  return { ok: true, value: { dir, env } }
}

/**
 * A virtualenv with grpcio-tools (its bundled protoc), grpcio-health-checking and grpcio-reflection, at pinned
 * versions. Not installed (with the reason) when there is no python3 with venv, or pip cannot fetch the packages.
 */
export const installPythonTools = async (): Promise<Installed<{ readonly python: string }>> => {
  if (!(await found("python3", ["-c", "import venv"]))) return { ok: false, why: "no python3 with the venv module on PATH" }
  const dir = join(CACHE, `py-grpcio-tools-${PINNED.grpcioTools}-health-${PINNED.grpcioHealthChecking}-reflection-${PINNED.grpcioReflection}`)
  const python = join(dir, "bin", "python")
  const marker = join(dir, ".installed")
  if (!existsSync(marker)) {
    rmSync(dir, { recursive: true, force: true })
    try {
      await run("python3", ["-m", "venv", dir], { timeoutMs: 120_000 })
      await run(python, [
        "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet",
        `grpcio-tools==${PINNED.grpcioTools}`,
        `grpcio-health-checking==${PINNED.grpcioHealthChecking}`,
        `grpcio-reflection==${PINNED.grpcioReflection}`
      ], { timeoutMs: 600_000 })
    } catch (error) {
      rmSync(dir, { recursive: true, force: true })
      if (!unreachable(error)) throw error
      return { ok: false, why: `pip could not fetch grpcio-tools ${PINNED.grpcioTools}: ${String(error)}` }
    }
    writeFileSync(marker, new Date().toISOString())
  }
  return { ok: true, value: { python } }
}
