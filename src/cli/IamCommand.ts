import { parseArgs } from "node:util"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { type AppConfig, configLayer } from "../config/AppConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { BcryptPasswordHasher } from "../platform/PasswordHasher.js"
import { SecureRandom } from "../platform/SecureRandom.js"
import { Transactions } from "../platform/sql/Transactions.js"
import { Authority } from "../iam/access/Authority.js"
import { LoginThrottle } from "../iam/accounts/LoginThrottle.js"
import { LoginThrottleRepo } from "../iam/store/LoginThrottleRepo.js"
import { IamPolicy } from "../iam/access/IamPolicy.js"
import { IamPolicyRules } from "../iam/access/IamPolicyRules.js"
import { Roles } from "../iam/access/Roles.js"
import { RolesRepo } from "../iam/store/RolesRepo.js"
import { Accounts } from "../iam/accounts/Accounts.js"
import { AccountsRepo } from "../iam/store/AccountsRepo.js"
import { bootstrapAdmin } from "../iam/BootstrapAdmin.js"
import { checkRegistration } from "../iam/domain/AccountRules.js"
import { IamSql } from "../iam/IamSql.js"
import { generatePaserk } from "../iam/tokens/IamKeys.js"
import { databaseFor, migrations } from "./StartupWork.js"

/** `gatehouse iam generate-key`: a new signing key and its public half, for .env and for resource servers. */
export const generateKeyText = (): string => {
  const { public: publicKey, secret } = Effect.runSync(Effect.provide(generatePaserk, SecureRandom.Live))
  return `AUTH_IAM_PASETO_SECRET_KEY=${secret}\n# public key (published at /auth/keys): ${publicKey}\n`
}

// Only what bootstrapping touches: no signing keys, so it works before AUTH_IAM_PASETO_SECRET_KEY is set.
const BootstrapServices = Layer.mergeAll(Accounts.layer, Roles.layer).pipe(
  Layer.provideMerge(Authority.layer),
  Layer.provideMerge(LoginThrottle.layer),
  Layer.provideMerge(LoginThrottleRepo.Default),
  Layer.provideMerge(IamPolicy.layer),
  Layer.provideMerge(IamPolicy.engine),
  Layer.provideMerge(IamPolicyRules.Default),
  Layer.provideMerge(Layer.mergeAll(RolesRepo.Default, AccountsRepo.Default, Transactions.Live)),
  Layer.provideMerge(IamSql.layer),
  Layer.provide(BcryptPasswordHasher())
)

const readStdin = (): Promise<string> =>
  new Promise((resolve, reject) => {
    let text = ""
    process.stdin.setEncoding("utf8")
    process.stdin.on("data", (chunk) => (text += chunk))
    process.stdin.on("end", () => resolve(text.replace(/\r?\n$/, "")))
    process.stdin.on("error", reject)
  })

const USAGE = "usage: gatehouse iam bootstrap-admin --username NAME --email ADDRESS | gatehouse iam generate-key\n"

/**
 * The `iam` subcommands that need the configuration (`generate-key` needs none: the dispatch answers it before the
 * configuration is read). Returns the exit code. The admin password is never taken from the command line (it would
 * sit in shell history and the process list): AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD or standard input.
 */
export const iamCommand = async (argv: ReadonlyArray<string>, config: AppConfig): Promise<number> => {
  const [sub, ...rest] = argv
  if (sub !== "bootstrap-admin") {
    process.stderr.write(USAGE)
    return 2
  }
  let values: { username?: string | undefined; email?: string | undefined }
  try {
    values = parseArgs({ args: [...rest], options: { username: { type: "string" }, email: { type: "string" } } }).values
  } catch {
    process.stderr.write(`${USAGE}(the password is read from AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD or standard input)\n`)
    return 2
  }
  if (values.username === undefined || values.email === undefined) {
    process.stderr.write(USAGE)
    return 2
  }
  const password = config.iam.bootstrapAdmin.password._tag === "Some"
    ? config.iam.bootstrapAdmin.password.value
    : Redacted.make(await readStdin())
  // Checked before the database is opened: bad input is reported without a connection to wait for or close.
  const registration = checkRegistration({ username: values.username, email: values.email, password: Redacted.value(password) })
  if (Either.isLeft(registration)) {
    process.stderr.write(`bootstrap-admin failed: ${registration.left.message}\n`)
    return 1
  }
  // The services read the iam tables while they are built, so the migrations must run before they are provided.
  const program = Effect.zipRight(
    migrations(config),
    bootstrapAdmin({ username: values.username!, email: values.email!, password }).pipe(Effect.provide(BootstrapServices))
  ).pipe(
    Effect.provide(configLayer(config)),
    Effect.provide(databaseFor(config, { wait: "2 minutes", holder: "command" })),
    Effect.scoped,
    Effect.provide(LoggingLive(config.log))
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) {
    process.stdout.write(`${exit.value.created ? "created" : "updated"} admin user ${exit.value.userId} (role ${config.iam.adminRole})\n`)
    return 0
  }
  const failure = exit.cause._tag === "Fail" ? (exit.cause.error as { message?: string }).message : undefined
  process.stderr.write(`bootstrap-admin failed: ${failure ?? "unexpected error"}\n`)
  return 1
}
