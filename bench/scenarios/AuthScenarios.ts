import { runAutocannon } from "../load/AutocannonLoad.js"
import { httpCall, httpJson, keepAliveAgent } from "../load/HttpClient.js"
import { MeasuredWindow, runLoops } from "../load/LoadWindow.js"
import { freshRefreshTokens, PASSWORD } from "../Seed.js"
import { type Scenario, type Target, uniqueTag } from "./Scenario.js"

const signupCall = (email: string) => ({ method: "POST" as const, path: "/signup", json: { email, password: PASSWORD } })
const passwordCall = (email: string) => ({ method: "POST" as const, path: "/token?grant_type=password", json: { email, password: PASSWORD } })
const refreshCall = (token: string) => ({ method: "POST" as const, path: "/token?grant_type=refresh_token", json: { refresh_token: token } })
const userCall = (token: string) => ({ method: "GET" as const, path: "/user", headers: { authorization: `Bearer ${token}` } })

export const signup: Scenario = {
  id: "signup",
  title: "POST /signup (autoconfirm)",
  concurrency: (o) => o.bcryptConnections,
  load: async (target, { options }) => {
    const agent = keepAliveAgent(options.bcryptConnections)
    const tag = uniqueTag(target.side)
    let n = 0
    return {
      run: (window) => runLoops({
        concurrency: options.bcryptConnections,
        window,
        send: () => httpCall(target.http, agent, signupCall(`signup-${tag}-${n++}@bench.example`)).then(() => undefined)
      }),
      close: () => agent.destroy()
    }
  },
  single: async (target) => {
    const agent = keepAliveAgent(1)
    const tag = uniqueTag(target.side)
    let n = 0
    return () => httpJson(target.http, agent, signupCall(`check-${tag}-${n++}@bench.example`))
  }
}

const passwordLoad = (target: Target, users: ReadonlyArray<{ readonly email: string }>, concurrency: number) => {
  const agent = keepAliveAgent(concurrency)
  let n = 0
  return {
    send: () => httpCall(target.http, agent, passwordCall(users[n++ % users.length]!.email)).then(() => undefined),
    close: () => agent.destroy()
  }
}

export const password: Scenario = {
  id: "password",
  title: "POST /token password grant",
  concurrency: (o) => o.bcryptConnections,
  load: async (target, { options, seeded }) => {
    const load = passwordLoad(target, seeded.users, options.bcryptConnections)
    return { run: (window) => runLoops({ concurrency: options.bcryptConnections, window, send: load.send }), close: load.close }
  },
  single: async (target, { seeded }) => {
    const agent = keepAliveAgent(1)
    let n = 0
    return () => httpJson(target.http, agent, passwordCall(seeded.users[n++ % seeded.users.length]!.email))
  }
}

export const refresh: Scenario = {
  id: "refresh",
  title: "POST /token refresh grant",
  concurrency: (o) => o.connections,
  load: async (target, { gatehouse, options, seeded }) => {
    // Each connection keeps its own chain, presenting the token the previous answer returned.
    const tokens = await freshRefreshTokens(gatehouse.http, seeded, options.connections)
    const agent = keepAliveAgent(options.connections)
    return {
      run: (window) => runLoops({
        concurrency: options.connections,
        window,
        send: async (slot) => {
          tokens[slot] = (await httpJson<{ refresh_token: string }>(target.http, agent, refreshCall(tokens[slot]!))).refresh_token
        }
      }),
      close: () => agent.destroy()
    }
  },
  single: async (target, { gatehouse, seeded }) => {
    let [token] = await freshRefreshTokens(gatehouse.http, seeded, 1)
    const agent = keepAliveAgent(1)
    return async () => {
      const answer = await httpJson<{ refresh_token: string }>(target.http, agent, refreshCall(token!))
      token = answer.refresh_token
      return answer
    }
  }
}

export const user: Scenario = {
  id: "user",
  title: "GET /user",
  concurrency: (o) => o.connections,
  load: async (target, { options, seeded }) => ({
    run: (window, spec) => runAutocannon({ target: target.http, connections: options.connections, spec, window, ...userCall(seeded.accessToken) })
  }),
  single: async (target, { seeded }) => {
    const agent = keepAliveAgent(1)
    return () => httpJson(target.http, agent, userCall(seeded.accessToken))
  }
}

export const userDuringBurst: Scenario = {
  id: "user-burst",
  title: "GET /user during password sign-ins",
  concurrency: (o) => o.connections,
  load: async (target, { options, seeded }) => {
    const burst = passwordLoad(target, seeded.users, options.burstConnections)
    return {
      run: async (window, spec) => {
        // The sign-ins have a window of their own: the figures of the row are GET /user's alone.
        const burstWindow = new MeasuredWindow(spec, { onOpen: () => undefined, onClose: () => undefined })
        await Promise.all([
          runAutocannon({ target: target.http, connections: options.connections, spec, window, ...userCall(seeded.accessToken) }),
          runLoops({ concurrency: options.burstConnections, window: burstWindow, send: burst.send })
        ])
        const sign = burstWindow.result()
        return {
          name: `password sign-ins, ${options.burstConnections} concurrent`,
          requests: sign.requests,
          errors: sign.errors,
          reqPerSec: (sign.requests - sign.errors) / (sign.elapsedMs / 1000)
        }
      },
      close: burst.close
    }
  }
}
