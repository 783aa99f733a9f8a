import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { OAUTH_PROVIDER_SPECS } from "../auth/oauth/OAuthProviders.js"
import { formatConfigIssues } from "../config/AppConfig.js"
import { type ConfigInvalid, type LoadedConfig, loadConfig, loadDatabaseSettings } from "../config/loadConfig.js"
import { containerCpus } from "../platform/process/ContainerCpus.js"
import { isStartupChild, startupChildTeardown } from "../platform/process/StartupChild.js"
import { ignoreRepeatedSignals, workerId } from "../platform/process/Workers.js"
import { releaseYoungGeneration } from "../platform/process/YoungGeneration.js"
import { USAGE } from "./Usage.js"

// One message naming every broken variable, then exit code 1; None tells the caller to stop.
const loadOrReport = async <A>(load: Effect.Effect<A, ConfigInvalid>): Promise<Option.Option<A>> => {
  const loaded = await Effect.runPromiseExit(load)
  if (Exit.isSuccess(loaded)) return Option.some(loaded.value)
  const issues = loaded.cause._tag === "Fail" ? loaded.cause.error.issues : [{ variable: "configuration", rule: "could not be loaded" }]
  process.stderr.write(formatConfigIssues(issues) + "\n")
  process.exitCode = 1
  return Option.none()
}

const runOptions = { disableErrorReporting: true, disablePrettyLogger: true }

/**
 * The command line: `argv` without node and the script. Exit codes: 0 done, 1 a bad configuration or a failed
 * command, 2 a command line it cannot read.
 */
export const cli = async (argv: ReadonlyArray<string>): Promise<void> => {
  const command = argv[0] ?? "serve"
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(USAGE)
    return
  }
  const commands = ["serve", "multi", "migrate", "doctor", "export-sessions", "keys", "iam"]
  if (!commands.includes(command)) {
    process.stderr.write(`Unknown command: ${command}\n\n${USAGE}`)
    process.exitCode = 2
    return
  }
  // Only a cluster's primary, which supervises and serves nothing, keeps the young generation small (YoungGeneration.ts).
  if (command !== "serve" && command !== "multi") releaseYoungGeneration()
  if (command === "iam" && argv[1] === "generate-key") {
    const { generateKeyText } = await import("./IamCommand.js")
    process.stdout.write(generateKeyText())
    return
  }
  // The default worker count: the CPUs this process may use, its container's CPU quota included.
  const sources = { env: process.env, envFile: ".env", cores: containerCpus() }
  if (command === "migrate") {
    const settings = await loadOrReport(loadDatabaseSettings(sources))
    if (Option.isNone(settings)) return
    const { migrateCommand } = await import("./MigrateCommand.js")
    NodeRuntime.runMain(migrateCommand(settings.value), runOptions)
    return
  }
  if (command === "doctor") {
    const settings = await loadOrReport(loadDatabaseSettings(sources))
    if (Option.isNone(settings)) return
    const { doctorCommand } = await import("./DoctorCommand.js")
    // As runMain does for migrate: the exit ends the process, so a pool still open cannot keep it alive.
    process.exit(await Effect.runPromise(doctorCommand(settings.value)))
  }
  const configured = await loadOrReport(loadConfig(sources, OAUTH_PROVIDER_SPECS))
  if (Option.isNone(configured)) return
  if (command === "multi" && Option.isNone(configured.value.config.operatorToken)) {
    process.stderr.write("Invalid configuration:\n  AUTH_OPERATOR_TOKEN: is required in multi-instance mode (the multi command)\n")
    process.exitCode = 1
    return
  }
  const loaded: LoadedConfig = command === "multi"
    ? { ...configured.value, config: { ...configured.value.config, multiInstance: true } }
    : configured.value
  const { config } = loaded
  if (command === "export-sessions") {
    const { exportSessionsCommand } = await import("./ExportSessionsCommand.js")
    process.exit(await Effect.runPromise(exportSessionsCommand(config)))
  }
  if (command === "keys") {
    const { keysCommand } = await import("./KeysCommand.js")
    process.exitCode = await keysCommand(config)
    return
  }
  if (command === "iam") {
    const { iamCommand } = await import("./IamCommand.js")
    const code = await iamCommand(argv.slice(1), config)
    // As NodeRuntime.runMain does for the other commands, a failure ends the process: a database connection
    // still opening when the command gave up (IAM's LISTEN) must not keep it alive.
    if (code !== 0) process.exit(code)
    return
  }
  // Each command imports what it runs, no more: a cluster's primary, which serves no request, never loads the routes.
  if (Option.isSome(workerId)) {
    const { serveWorker } = await import("./Serve.js")
    NodeRuntime.runMain(serveWorker(loaded, workerId.value), runOptions)
    ignoreRepeatedSignals()
  } else if (config.workers > 1 && isStartupChild) {
    releaseYoungGeneration()
    const { primaryStartup } = await import("./PrimaryStartup.js")
    NodeRuntime.runMain(primaryStartup(loaded), { ...runOptions, teardown: startupChildTeardown })
  } else if (config.workers > 1) {
    const { primaryTeardown, servePrimary } = await import("./ServePrimary.js")
    NodeRuntime.runMain(servePrimary(loaded), { ...runOptions, teardown: primaryTeardown })
  } else {
    const { serve } = await import("./Serve.js")
    NodeRuntime.runMain(serve(loaded), runOptions)
  }
}
