import type { Agent } from "node:http"
import { httpCall, type HttpTarget, httpJson, keepAliveAgent } from "../load/HttpClient.js"
import { PASSWORD, type Seeded } from "../Seed.js"
import { uniqueTag } from "../scenarios/Scenario.js"

/**
 * Requests in flight of each kind: 10 in all, a moderate load that keeps both cores busy without queueing. Sign-ups
 * cost about 60 ms of bcrypt each, so one at a time is already a small share of the answers (a few per second
 * against hundreds) and a fair share of the CPU.
 */
export const SOAK_MIX = { user: 6, refresh: 3, signup: 1 } as const

export type SoakKind = keyof typeof SOAK_MIX

export interface KindCounts {
  /** Answers, successes and failures. */
  readonly requests: number
  readonly failed: number
  readonly firstError?: string
}

interface Chain {
  refreshToken: string
  accessToken: string
}

type Tokens = { readonly access_token: string; readonly refresh_token: string }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The soak's steady mixed load, until stopped: GET /user, refresh grants in chains (each refresh presents the token
 * the previous one answered, as a client does) and sign-ups. GET /user presents the newest access token of a chain,
 * so the load can run longer than an access token lives.
 */
export class SoakLoad {
  private readonly counts: Record<SoakKind, { requests: number; failed: number; firstError?: string }> = {
    user: { requests: 0, failed: 0 },
    refresh: { requests: 0, failed: 0 },
    signup: { requests: 0, failed: 0 }
  }
  private restarts = 0
  private stopped = false
  private running: Promise<void> | undefined
  private readonly agents: Record<SoakKind | "restart", Agent> = {
    user: keepAliveAgent(SOAK_MIX.user),
    refresh: keepAliveAgent(SOAK_MIX.refresh),
    signup: keepAliveAgent(SOAK_MIX.signup),
    restart: keepAliveAgent(1)
  }

  private constructor(private readonly target: HttpTarget, private readonly seeded: Seeded, private readonly chains: Array<Chain>) {}

  /** Starts each refresh chain with a password grant (not counted), then the load. */
  static async start(target: HttpTarget, seeded: Seeded): Promise<SoakLoad> {
    const agent = keepAliveAgent(1)
    const chains: Array<Chain> = []
    try {
      for (let i = 0; i < SOAK_MIX.refresh; i++) chains.push(await SoakLoad.signIn(target, agent, seeded, i))
    } finally {
      agent.destroy()
    }
    const load = new SoakLoad(target, seeded, chains)
    load.running = load.run()
    return load
  }

  private static async signIn(target: HttpTarget, agent: Agent, seeded: Seeded, i: number): Promise<Chain> {
    const tokens = await httpJson<Tokens>(target, agent, {
      method: "POST",
      path: "/token?grant_type=password",
      json: { email: seeded.users[i % seeded.users.length]!.email, password: PASSWORD }
    })
    return { refreshToken: tokens.refresh_token, accessToken: tokens.access_token }
  }

  private async loop(kind: SoakKind, send: () => Promise<void>, onFailure?: () => Promise<void>): Promise<void> {
    const count = this.counts[kind]
    while (!this.stopped) {
      try {
        await send()
        count.requests++
      } catch (error) {
        count.requests++
        count.failed++
        count.firstError ??= error instanceof Error ? error.message : String(error)
        // A failing server answers at once; without a pause the loop would spin.
        await sleep(20)
        await onFailure?.()
      }
    }
  }

  /**
   * A chain whose refresh failed may have lost its token (rotated by an answer that never arrived, or revoked):
   * it starts again from a password grant, counted apart from the load's requests.
   */
  private async restartChain(i: number): Promise<void> {
    while (!this.stopped) {
      try {
        this.chains[i] = await SoakLoad.signIn(this.target, this.agents.restart, this.seeded, i)
        this.restarts++
        return
      } catch {
        await sleep(1000)
      }
    }
  }

  private run(): Promise<void> {
    const tag = uniqueTag("gatehouse")
    let signups = 0
    const loops = [
      ...Array.from({ length: SOAK_MIX.user }, (_, slot) =>
        this.loop("user", async () => {
          await httpCall(this.target, this.agents.user, {
            method: "GET",
            path: "/user",
            headers: { authorization: `Bearer ${this.chains[slot % this.chains.length]!.accessToken}` }
          })
        })),
      ...Array.from({ length: SOAK_MIX.refresh }, (_, i) =>
        this.loop("refresh", async () => {
          const tokens = await httpJson<Tokens>(this.target, this.agents.refresh, {
            method: "POST",
            path: "/token?grant_type=refresh_token",
            json: { refresh_token: this.chains[i]!.refreshToken }
          })
          this.chains[i] = { refreshToken: tokens.refresh_token, accessToken: tokens.access_token }
        }, () => this.restartChain(i))),
      ...Array.from({ length: SOAK_MIX.signup }, () =>
        this.loop("signup", async () => {
          await httpCall(this.target, this.agents.signup, {
            method: "POST",
            path: "/signup",
            json: { email: `soak-${tag}-${signups++}@bench.example`, password: PASSWORD }
          })
        }))
    ]
    return Promise.all(loops).then(() => undefined)
  }

  /** Running totals, all kinds together. */
  totals(): { readonly requests: number; readonly failed: number } {
    const all = Object.values(this.counts)
    return { requests: all.reduce((n, c) => n + c.requests, 0), failed: all.reduce((n, c) => n + c.failed, 0) }
  }

  byKind(): Readonly<Record<SoakKind, KindCounts>> {
    return { user: { ...this.counts.user }, refresh: { ...this.counts.refresh }, signup: { ...this.counts.signup } }
  }

  /** Chains started again after a failed refresh. */
  chainRestarts(): number {
    return this.restarts
  }

  /** Lets every request in flight finish, then closes the connections. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.running
    Object.values(this.agents).forEach((agent) => agent.destroy())
  }
}
