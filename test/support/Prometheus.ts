import { type AddressInfo, createServer } from "node:net"

/** A port nothing listens on now (the scrape server needs a concrete one: 0 is not a valid setting). */
export const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = (probe.address() as AddressInfo)
      probe.close(() => resolve(port))
    })
  })

export interface PrometheusSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** The samples of a Prometheus text page: name, labels and value of every line that is not a comment. */
export const parsePrometheus = (text: string): ReadonlyArray<PrometheusSample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a Prometheus sample: ${line}`)
    const labels = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])
    )
    return { name: match[1]!, labels, value: Number(match[3]) }
  })
