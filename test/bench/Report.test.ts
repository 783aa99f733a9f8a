import { describe, expect, it } from "@effect/vitest"
import { markdownTable } from "../../bench/report/MarkdownTable.js"
import type { RunRecord, Side } from "../../bench/report/RunRecord.js"
import { summarize } from "../../bench/report/Summary.js"
import { svgChart } from "../../bench/report/SvgChart.js"

const run = (scenario: string, side: Side, round: number, figures: { reqPerSec: number; p99: number; cpu: number; statements: number }): RunRecord => ({
  scenario,
  side,
  round,
  startedAt: "2026-11-24T00:00:00.000Z",
  requests: figures.reqPerSec * 8,
  errors: 0,
  elapsedMs: 8000,
  reqPerSec: figures.reqPerSec,
  latency: { count: figures.reqPerSec * 8, mean: figures.p99 / 2, p50: figures.p99 / 2, p90: figures.p99, p99: figures.p99, max: figures.p99 },
  serverCpuMs: figures.cpu * figures.reqPerSec * 8,
  serverCpuMsPerReq: figures.cpu,
  serverProcesses: side === "gatehouse" ? 1 : 3,
  pgCpuMs: 0.5 * figures.reqPerSec * 8,
  pgCpuMsPerReq: 0.5,
  pgProcesses: 20,
  loadCpuMs: 100,
  otherCpuMs: 0,
  otherCpuShare: 0,
  statements: figures.statements * figures.reqPerSec * 8,
  statementsPerReq: figures.statements
})

const scenarios = [
  { id: "user", title: "GET /user" },
  { id: "refresh", title: "POST /token refresh grant" },
  { id: "floor", title: "Floor: hello", sides: { gatehouse: "Effect HttpApi", minimal: "node:http" } },
  { id: "never-run", title: "not in this run" }
]

const runs: Array<RunRecord> = [
  run("user", "gatehouse", 1, { reqPerSec: 300, p99: 200, cpu: 3.2, statements: 2 }),
  run("user", "minimal", 1, { reqPerSec: 1000, p99: 80, cpu: 0.8, statements: 2 }),
  run("user", "gatehouse", 2, { reqPerSec: 400, p99: 160, cpu: 3.4, statements: 2 }),
  run("user", "minimal", 2, { reqPerSec: 1000, p99: 80, cpu: 0.8, statements: 2 }),
  run("refresh", "gatehouse", 1, { reqPerSec: 50, p99: 2000, cpu: 11, statements: 17.6 }),
  run("refresh", "minimal", 1, { reqPerSec: 150, p99: 900, cpu: 3.6, statements: 16.2 }),
  run("floor", "gatehouse", 1, { reqPerSec: 3500, p99: 40, cpu: 0.2, statements: 0 }),
  run("floor", "minimal", 1, { reqPerSec: 20000, p99: 8, cpu: 0.03, statements: 0 })
]

describe("summarize", () => {
  const rows = summarize(scenarios, runs, [
    { scenario: "refresh", side: "gatehouse", perRequest: 16 },
    { scenario: "refresh", side: "minimal", perRequest: 15 }
  ])

  it("has one row per scenario that ran, with each side's mean over its rounds", () => {
    expect(rows.map((r) => r.scenario.id)).toStrictEqual(["user", "refresh", "floor"])
    expect(rows[0]!.gatehouse).toMatchObject({ runs: 2, reqPerSec: 350, p99: 180, serverProcesses: 1 })
    expect(rows[0]!.gatehouse.serverCpuMsPerReq).toBeCloseTo(3.3)
    expect(rows[0]!.minimal).toMatchObject({ runs: 2, reqPerSec: 1000, p99: 80, serverProcesses: 3 })
  })

  it("gives every figure as Gatehouse over minimal", () => {
    expect(rows[0]!.ratios.reqPerSec).toBeCloseTo(0.35)
    expect(rows[0]!.ratios.p99).toBeCloseTo(2.25)
    expect(rows[0]!.ratios.serverCpuMsPerReq).toBeCloseTo(4.125)
    expect(rows[0]!.ratios.pgCpuMsPerReq).toBeCloseTo(1)
  })

  it("takes statements per request from the sequential check when there is one", () => {
    expect(rows[1]!.gatehouse).toMatchObject({ statementsPerReq: 16, statementsChecked: true })
    expect(rows[0]!.gatehouse).toMatchObject({ statementsPerReq: 2, statementsChecked: false })
  })
})

describe("markdownTable", () => {
  const rows = summarize(scenarios, runs, [
    { scenario: "refresh", side: "gatehouse", perRequest: 16 },
    { scenario: "refresh", side: "minimal", perRequest: 15 }
  ])
  const lines = markdownTable(rows).split("\n")

  it("has a header, a rule and one row per scenario, all with the same columns", () => {
    expect(lines).toHaveLength(2 + rows.length)
    const columns = lines.map((line) => line.split(" | ").length)
    expect(new Set(columns).size).toBe(1)
    expect(lines[2]).toMatch(/^\| GET \/user \| 350 \| 1000 \| ×0\.35 \|/)
  })

  it("flags statement counts that differ, and marks the ones counted under load", () => {
    expect(lines[3]).toContain("16.0 / 15.0 ⚠")
    expect(lines[2]).toContain("~2.0 / ~2.0 |")
  })
})

/**
 * Well-formed enough for a browser: one root, every tag closed in order, attributes quoted, no stray "<" or "&".
 * (The chart has no comments, CDATA or doctype, so this small checker covers what it writes.)
 */
const wellFormed = (xml: string): boolean => {
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, "")
  const stack: Array<string> = []
  let roots = 0
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g
  let last = 0
  for (let m = tag.exec(body); m !== null; m = tag.exec(body)) {
    const text = body.slice(last, m.index)
    if (text.includes("<") || /&(?!(amp|lt|gt|quot|apos);)/.test(text)) return false
    last = tag.lastIndex
    const [, closing, name, , selfClosing] = m
    if (stack.length === 0) roots++
    if (closing === "/") {
      if (stack.pop() !== name) return false
    } else if (selfClosing !== "/") {
      stack.push(name!)
    }
  }
  return stack.length === 0 && roots === 1 && body.slice(last).trim() === ""
}

describe("svgChart", () => {
  const rows = summarize(scenarios, runs)
  const svg = svgChart(rows, "2026-11-24, commit abc <test> & co")

  it("is a well-formed SVG document", () => {
    expect(wellFormed(svg)).toBe(true)
    expect(svg).toContain(`<svg xmlns="http://www.w3.org/2000/svg"`)
    expect(svg).toContain("abc &lt;test&gt; &amp; co")
    expect(wellFormed("<svg><g></svg></g>")).toBe(false)
  })

  it("draws one bar per side per scenario in each of its two panels (req/s and p99)", () => {
    for (const side of ["gatehouse", "minimal"]) {
      const bars = [...svg.matchAll(new RegExp(`class="bar ${side}" data-scenario="([^"]+)"`, "g"))].map((m) => m[1])
      expect(bars).toStrictEqual(["user", "refresh", "floor", "user", "refresh", "floor"])
    }
  })

  it("draws longer bars for larger values", () => {
    const widths = [...svg.matchAll(/width="([\d.]+)" height="\d+" fill="[^"]+" class="bar gatehouse" data-scenario="(\w+)"/g)]
      .slice(0, 3)
      .map((m) => Number(m[1]))
    expect(widths[2]).toBeGreaterThan(widths[0]!) // 3500 req/s against 350
    expect(widths[0]).toBeGreaterThan(widths[1]!) // 350 against 50
  })
})
