import * as Context from "effect/Context"
import type { HttpProduct } from "../../../platform/http/HttpEdge.js"

/** Where the console lives: this path and everything under it, at the root only (not under /auth/v1). */
export const CONSOLE_PATH = "/_admin"

/** Whether the console owns a request's path. */
export const consoleOwns = (path: string): boolean => path === CONSOLE_PATH || path.startsWith(`${CONSOLE_PATH}/`)

/**
 * The admin console on the shared port, beside the auth API (ConsoleLive.ts builds it). Only this tag is imported
 * where the routes are composed, so a server with the console off never loads the console's code.
 */
export class ConsoleHttp extends Context.Tag("auth/ConsoleHttp")<ConsoleHttp, HttpProduct>() {}

/** Adds the console's entry page to an OpenAPI document, as the other pages the configuration turns on are. */
export const documentConsole = (spec: Record<string, any>): Record<string, any> => ({
  ...spec,
  paths: {
    ...spec["paths"],
    [CONSOLE_PATH]: {
      servers: [{ url: "/" }],
      get: {
        tags: ["Pages"],
        operationId: "pages.adminConsole",
        summary: "Admin console",
        description: "HTML pages for an operator (ADMIN_CONSOLE_ENABLED): sign in with the service_role key, then the users, " +
          "one user's profile, identities, factors and sessions, bans, deletion, recovery mails, the audit log and the IAM " +
          "roles. Not an API: the pages under this path change only through their own forms.",
        parameters: [],
        security: [],
        responses: { 200: { description: "The sign-in page", content: { "text/html": { schema: { type: "string" } } } } }
      }
    }
  }
})
