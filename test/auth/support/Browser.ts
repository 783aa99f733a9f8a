/**
 * A browser as far as redirect-based sign-in needs one: it follows redirects itself (so a test sees every hop),
 * keeps cookies per host name as a browser does (the name in the URL, before `hosts` resolves it, and whatever the
 * port), and resolves `hosts` (a registered callback's origin) to where the server really listens, as /etc/hosts
 * would. So a cookie set by http://127.0.0.1:<port> is not sent to http://localhost:9999, even when both reach the
 * same server.
 */
export interface Hop {
  readonly status: number
  readonly url: string
  readonly location: string | undefined
}

export const browser = (hosts: Readonly<Record<string, string>> = {}) => {
  const jar = new Map<string, Map<string, string>>()
  const resolve = (url: string): string => {
    const parsed = new URL(url)
    const to = hosts[parsed.origin]
    return to === undefined ? url : `${to}${parsed.pathname}${parsed.search}`
  }
  const cookiesFor = (url: string) => {
    const host = new URL(url).hostname
    if (!jar.has(host)) jar.set(host, new Map())
    return jar.get(host)!
  }
  const request = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const target = resolve(url)
    const cookies = cookiesFor(url)
    const headers = new Headers(init.headers)
    if (cookies.size > 0) headers.set("cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "))
    const response = await fetch(target, { ...init, headers, redirect: "manual" })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const eq = pair!.indexOf("=")
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      if (value === "" || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) cookies.delete(name)
      else cookies.set(name, value)
    }
    return response
  }
  /** Follows redirects from `url` until a page answers or the next hop leaves for `stopAt` (the app). */
  const follow = async (url: string, stopAt: string, init: RequestInit = {}): Promise<ReadonlyArray<Hop>> => {
    const hops: Array<Hop> = []
    let current = url
    let options = init
    for (let i = 0; i < 20; i++) {
      const response = await request(current, options)
      const location = response.headers.get("location") ?? undefined
      await response.arrayBuffer()
      hops.push({ status: response.status, url: current, location: location === undefined ? undefined : new URL(location, current).href })
      if (location === undefined || response.status < 300 || response.status >= 400) return hops
      const next = new URL(location, current).href
      if (next.startsWith(stopAt)) return hops
      current = next
      options = {}
    }
    throw new Error("too many redirects")
  }
  /** The value of a cookie the browser holds for `url`'s host, if any. */
  const cookie = (url: string, name: string): string | undefined => cookiesFor(url).get(name)
  return { request, follow, cookie }
}
