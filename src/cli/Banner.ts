import * as Option from "effect/Option"
import type { LoadedConfig } from "../config/loadConfig.js"
import { outboxPageUrl } from "../platform/http/OutboxHttp.js"
import { mailToOutbox, outboxEnabled, textsToOutbox } from "../platform/PortsLive.js"
import { VERSION } from "../Package.js"

/** The ports the server ended up on (a configured port may be 0). */
export interface Bound {
  readonly http: number
  readonly grpc: Option.Option<number>
}

/** What the embedded default prints once it listens: where it serves, and what it settled for the developer. */
export const banner = ({ config, defaulted }: LoadedConfig, bound: Bound): string =>
  [
    `Gatehouse ${VERSION} (embedded PostgreSQL in ${config.dataDir})`,
    `  listening on http://${config.api.host}:${bound.http}`,
    ...Option.match(bound.grpc, { onNone: () => [], onSome: (port) => [`  IAM gRPC on ${config.iam.grpcHost}:${port}`] }),
    ...(outboxEnabled(config)
      ? [`  ${
        mailToOutbox(config) && textsToOutbox(config) ? "mail and texts are" : mailToOutbox(config) ? "mail is" : "texts are"
      } not delivered: read them at ${outboxPageUrl(config.api.host, bound.http)}`]
      : []),
    ...(defaulted.length > 0 ? ["  development defaults in use:", ...defaulted.map((d) => `    ${d}`)] : []),
    "  API keys for Supabase clients: `node dist/main.js keys` prints the anon and service_role keys",
    "  set DATABASE_URL (and the required settings in .env.example) to run in production",
    `  Ctrl-C stops the server; to start over with no data, stop it and delete ${config.dataDir}`
  ].join("\n")
