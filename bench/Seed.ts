import { type HttpTarget, httpJson, keepAliveAgent } from "./load/HttpClient.js"

export const PASSWORD = "bench password 1"

export interface Seeded {
  /** Users made by Gatehouse's /signup (autoconfirm), for the password grant (round-robin). */
  readonly users: ReadonlyArray<{ readonly email: string }>
  /** A seeded user's access token (its session exists), for GET /user. */
  readonly accessToken: string
  /** IAM accounts made by Gatehouse's POST /auth/register, for Login (round-robin). */
  readonly iamAccounts: ReadonlyArray<{ readonly username: string }>
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at once. */
export const inParallel = async <A>(count: number, concurrency: number, task: (i: number) => Promise<A>): Promise<Array<A>> => {
  const results: Array<A> = new Array(count)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++
      results[i] = await task(i)
    }
  }))
  return results
}

/** Seeds through Gatehouse's own API, so both sides work on rows Gatehouse wrote. */
export const seed = async (gatehouse: HttpTarget, counts: { users: number; iamAccounts: number }): Promise<Seeded> => {
  const agent = keepAliveAgent(8)
  try {
    const sessions = await inParallel(counts.users, 8, (i) =>
      httpJson<{ access_token: string; user: { email: string } }>(gatehouse, agent, {
        method: "POST",
        path: "/signup",
        json: { email: `seed-${i}@bench.example`, password: PASSWORD }
      }))
    const accounts = await inParallel(counts.iamAccounts, 8, (i) =>
      httpJson<{ user: { username: string } }>(gatehouse, agent, {
        method: "POST",
        path: "/auth/register",
        json: { username: `bench${i}`, password: PASSWORD, email: `bench${i}@bench.example` }
      }))
    return {
      users: sessions.map((s) => ({ email: s.user.email })),
      accessToken: sessions[0]!.access_token,
      iamAccounts: accounts.map((a) => ({ username: a.user.username }))
    }
  } finally {
    agent.destroy()
  }
}

/** Fresh refresh tokens from password sign-ins on Gatehouse: one chain start per connection of a refresh run. */
export const freshRefreshTokens = async (gatehouse: HttpTarget, seeded: Seeded, count: number): Promise<Array<string>> => {
  const agent = keepAliveAgent(8)
  try {
    return await inParallel(count, 8, async (i) =>
      (await httpJson<{ refresh_token: string }>(gatehouse, agent, {
        method: "POST",
        path: "/token?grant_type=password",
        json: { email: seeded.users[i % seeded.users.length]!.email, password: PASSWORD }
      })).refresh_token)
  } finally {
    agent.destroy()
  }
}
