import { join } from "node:path"
import { freePorts, serverEnv } from "../Gatehouse.js"
import type { Side } from "../report/RunRecord.js"
import type { Target } from "../scenarios/Scenario.js"
import { type ServerProcess, startServer } from "../ServerProcess.js"

export type FloorServers = Record<Side, { readonly server: ServerProcess; readonly target: Target }>

/** The framework floor's two hello servers, Effect's on Gatehouse's side, each with `workers` workers. */
export const startFloorServers = async (workers: number, scriptDir: string, tmp: string): Promise<FloorServers> => {
  const start = async (side: Side, file: string) => {
    const [port] = await freePorts(1)
    const server = await startServer({
      name: `floor-${side}`,
      script: join(scriptDir, file),
      env: serverEnv({ PORT: String(port), AUTH_WORKERS: String(workers) }),
      cwd: tmp,
      logPath: join(tmp, `floor-${side}.log`)
    })
    return { server, target: { side, http: { host: "127.0.0.1", port: port! }, grpc: "" } }
  }
  const gatehouse = await start("gatehouse", "EffectHello.js")
  try {
    return { gatehouse, minimal: await start("minimal", "NodeHello.js") }
  } catch (error) {
    await gatehouse.server.stop()
    throw error
  }
}
