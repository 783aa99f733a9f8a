import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cleanup } from "./Cleanup.js"
import { freePorts, generateIamKey } from "./Gatehouse.js"
import { type Postgres, startPostgres } from "./Postgres.js"

/** A run's scratch: a temporary directory that its Cleanup removes; the Cleanup also runs on SIGINT and SIGTERM. */
export interface Scratch {
  readonly cleanup: Cleanup
  readonly tmp: string
}

export const scratch = (kind: string): Scratch => {
  const cleanup = new Cleanup()
  cleanup.exitOnSignals()
  const tmp = mkdtempSync(join(tmpdir(), `gatehouse-bench-${kind}-`))
  cleanup.add("remove the temporary directory", () => rmSync(tmp, { recursive: true, force: true }))
  return { cleanup, tmp }
}

/**
 * What a run of Gatehouse alone starts from (the size and soak runs): a throwaway PostgreSQL 15 in the scratch
 * directory (with `settings`, see startPostgres), stopped by its Cleanup, free ports for the API, the IAM gRPC port
 * and an SMTP server nobody runs, and an IAM key.
 */
export const throwawayDatabase = async (
  repo: string,
  { cleanup, tmp }: Scratch,
  progress: (line: string) => void,
  settings: Readonly<Record<string, string>> = {}
): Promise<{ readonly pg: Postgres; readonly ports: { readonly api: number; readonly grpc: number; readonly smtp: number }; readonly iamKey: string }> => {
  progress("PostgreSQL 15: starting a throwaway instance…")
  const pg = await startPostgres(repo, join(tmp, "pg"), (stop) => cleanup.add("stop PostgreSQL", stop), settings)
  const [api, grpc, smtp] = await freePorts(3)
  return { pg, ports: { api: api!, grpc: grpc!, smtp: smtp! }, iamKey: await generateIamKey(repo, tmp) }
}
