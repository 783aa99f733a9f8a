import type { Agent } from "node:http"
import { httpAnswer, httpCall, type HttpTarget, keepAliveAgent } from "../load/HttpClient.js"
import { runLoops } from "../load/LoadWindow.js"
import { signHs256 } from "../minimal/Hs256.js"
import type { Scenario } from "../scenarios/Scenario.js"

const PER_PAGE = 50

/** A service_role token as `node dist/main.js keys` makes one: what an admin client sends. */
export const serviceRoleToken = (jwtSecret: string): string => {
  const now = Math.floor(Date.now() / 1000)
  return signHs256(jwtSecret, { role: "service_role", iss: "supabase", iat: now, exp: now + 24 * 3600 })
}

/**
 * The last page GoTrue's paging names for `path`: auth-js reads X-Total-Count the same way to give `lastPage`.
 * Asked once while setting a run up, outside the measured window.
 */
const lastPage = async (target: HttpTarget, agent: Agent, path: string, token: string): Promise<number> => {
  const answer = await httpAnswer(target, agent, { method: "GET", path: `${path}?page=1&per_page=${PER_PAGE}`, headers: { authorization: `Bearer ${token}` } })
  const total = Number(answer.headers["x-total-count"])
  if (answer.status !== 200 || !Number.isSafeInteger(total)) {
    throw new Error(`GET ${path}: HTTP ${answer.status}, X-Total-Count ${String(answer.headers["x-total-count"])}`)
  }
  // The last full page: the last page proper holds total % PER_PAGE rows (38 at 1,000,738 users, any number from 1 to
  // 50 at 200), so its cost compared across sizes was the count's remainder more than the table's size.
  return Math.max(1, Math.floor(total / PER_PAGE))
}

/** One admin GET over and over, `page` chosen at set-up (page 1, or the last full one the total names). */
const adminGet = (
  id: string,
  title: string,
  path: string,
  query: (target: HttpTarget, agent: Agent, token: string) => Promise<string>,
  token: string
): Scenario => ({
  id,
  title,
  concurrency: (o) => o.sizeConnections,
  load: async (target, { options }) => {
    const agent = keepAliveAgent(options.sizeConnections)
    const call = { method: "GET" as const, path: `${path}?${await query(target.http, agent, token)}`, headers: { authorization: `Bearer ${token}` } }
    return {
      run: (window) => runLoops({ concurrency: options.sizeConnections, window, send: () => httpCall(target.http, agent, call).then(() => undefined) }),
      close: () => agent.destroy()
    }
  }
})

/**
 * The admin reads that grow with the tables: the users list (page 1, a filter matching one user, the last page) and
 * the audit log (page 1 and the last page). No minimal twin: Gatehouse is measured against itself at two sizes.
 */
export const adminScenarios = (token: string): ReadonlyArray<Scenario> => [
  adminGet("admin-page1", "GET /admin/users, page 1", "/admin/users", async () => `page=1&per_page=${PER_PAGE}`, token),
  // One API-made user's address: one match at either size, the way an operator looks somebody up.
  adminGet("admin-filter", "GET /admin/users?filter= (one match)", "/admin/users", async () => `page=1&per_page=${PER_PAGE}&filter=seed-42%40bench`, token),
  adminGet("admin-last", "GET /admin/users, last full page", "/admin/users", async (target, agent, t) =>
    `page=${await lastPage(target, agent, "/admin/users", t)}&per_page=${PER_PAGE}`, token),
  adminGet("audit-page1", "GET /admin/audit, page 1", "/admin/audit", async () => `page=1&per_page=${PER_PAGE}`, token),
  adminGet("audit-last", "GET /admin/audit, last full page", "/admin/audit", async (target, agent, t) =>
    `page=${await lastPage(target, agent, "/admin/audit", t)}&per_page=${PER_PAGE}`, token)
]
