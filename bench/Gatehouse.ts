import { execFile } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"
import { promisify } from "node:util"
import { httpCall, type HttpTarget, keepAliveAgent } from "./load/HttpClient.js"
import { type ServerProcess, startServer } from "./ServerProcess.js"

const run = promisify(execFile)

/** `count` different ports nothing listens on right now, on 127.0.0.1: all held open until all are known. */
export const freePorts = async (count: number): Promise<Array<number>> => {
  const servers = Array.from({ length: count }, () => createServer())
  try {
    return await Promise.all(servers.map((server) =>
      new Promise<number>((resolve, reject) => {
        server.once("error", reject)
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          if (typeof address === "object" && address !== null) resolve(address.port)
          else reject(new Error("no port"))
        })
      })))
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  }
}

// Settings from the caller's shell (or a .env) would change what is measured: only these reach the servers.
const isServerSetting = (name: string): boolean =>
  /^(AUTH_|GOTRUE_|OTEL_)/.test(name) ||
  ["PORT", "DATABASE_URL", "API_EXTERNAL_URL", "DB_NAMESPACE", "LOG_LEVEL", "LOG_FILE"].includes(name)

/** The caller's environment without any server setting, plus `settings`. */
export const serverEnv = (settings: Readonly<Record<string, string>>): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !isServerSetting(name))),
  ...settings
})

/** `iam generate-key`: a fresh Ed25519 pair as PASERK, for Gatehouse and the minimal server alike. */
export const generateIamKey = async (repoRoot: string, cwd: string): Promise<string> => {
  const { stdout } = await run(process.execPath, [join(repoRoot, "dist", "main.js"), "iam", "generate-key"], { cwd })
  const secret = /^AUTH_IAM_PASETO_SECRET_KEY=(k4\.secret\.\S+)$/m.exec(stdout)?.[1]
  if (secret === undefined) throw new Error(`iam generate-key printed no AUTH_IAM_PASETO_SECRET_KEY: ${stdout}`)
  return secret
}

export const migrateGatehouse = async (repoRoot: string, env: NodeJS.ProcessEnv, cwd: string): Promise<void> => {
  await run(process.execPath, [join(repoRoot, "dist", "main.js"), "migrate"], { env, cwd })
}

/** Gatehouse in production mode, ready once /health answers. Run from `cwd` so no stray .env is read. */
export const startGatehouse = (
  repoRoot: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  target: HttpTarget,
  how: { readonly executable?: string; readonly onSpawn?: (pid: number) => void } = {}
): Promise<ServerProcess> => {
  const agent = keepAliveAgent(1)
  return startServer({
    ...how,
    name: "gatehouse",
    script: join(repoRoot, "dist", "main.js"),
    env,
    cwd,
    logPath: join(cwd, "gatehouse.log"),
    ready: () => httpCall(target, agent, { method: "GET", path: "/health" }).then(() => true)
  }).finally(() => agent.destroy())
}
