import { randomBytes } from "node:crypto"
import type { BenchOptions } from "./BenchOptions.js"

/** The settings both servers get; only the ports differ between them. */
export const serverSettings = (databaseUrl: string, options: BenchOptions, ports: { api: number; smtp: number }, iamKey: string) => ({
  DATABASE_URL: databaseUrl,
  AUTH_DB_DRIVER: "postgres",
  AUTH_JWT_SECRET: randomBytes(32).toString("base64url"),
  AUTH_SITE_URL: "http://127.0.0.1:3000",
  // Also the JWT issuer: both sides sign the same claims.
  API_EXTERNAL_URL: `http://127.0.0.1:${ports.api}`,
  // Nothing listens there: with autoconfirm no mail is sent.
  AUTH_SMTP_HOST: "127.0.0.1",
  AUTH_SMTP_PORT: String(ports.smtp),
  AUTH_SMTP_ADMIN_EMAIL: "bench@bench.example",
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_API_HOST: "127.0.0.1",
  // At info the access log would dominate what is measured.
  LOG_LEVEL: "warn",
  AUTH_IAM_PASETO_SECRET_KEY: iamKey,
  AUTH_IAM_PASETO_KEY_ID: "bench",
  AUTH_IAM_GRPC_HOST: "127.0.0.1",
  AUTH_WORKERS: String(options.workers),
  // The minimal server's pool per process (bench/minimal/MinimalServer.ts): both sides hold the same connections.
  // Gatehouse's default is the same up to six workers and fewer each beyond: set, it is 10 on any machine.
  AUTH_DB_MAX_POOL_SIZE: "10"
})
