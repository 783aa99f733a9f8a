import { formatNumber } from "./Format.js"
import type { ScenarioRow } from "./Summary.js"

const COLORS = { gatehouse: "#4c78a8", minimal: "#f58518" } as const
const WIDTH = 960
const LABEL_WIDTH = 300
const PLOT_WIDTH = 560
const BAR = 13
const GROUP_GAP = 12
const PANEL_TOP = 44

const escapeXml = (text: string): string =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("\"", "&quot;")

const tick = (decade: number): string => (decade >= 0 ? (10 ** decade).toLocaleString("en-US") : (10 ** decade).toPrecision(1))

interface Panel {
  readonly title: string
  readonly value: (row: ScenarioRow, side: "gatehouse" | "minimal") => number
}

// Figures span four decades (bcrypt-bound sign-ups against a hello server), so a linear axis would hide half
// the scenarios: the axis is logarithmic, from the decade below the smallest value to the one above the largest.
const logDomain = (values: ReadonlyArray<number>): readonly [number, number] => {
  const positive = values.filter((v) => Number.isFinite(v) && v > 0)
  if (positive.length === 0) return [0, 1]
  const lo = Math.floor(Math.log10(Math.min(...positive)))
  const hi = Math.ceil(Math.log10(Math.max(...positive)))
  return [lo, hi > lo ? hi : lo + 1]
}

const panel = (rows: ReadonlyArray<ScenarioRow>, spec: Panel, top: number): { svg: string; height: number } => {
  const [lo, hi] = logDomain(rows.flatMap((row) => [spec.value(row, "gatehouse"), spec.value(row, "minimal")]))
  const x = (v: number): number =>
    Number.isFinite(v) && v > 0 ? Math.max(0, ((Math.log10(v) - lo) / (hi - lo)) * PLOT_WIDTH) : 0
  const groupHeight = 2 * BAR + GROUP_GAP
  const plotTop = top + 26
  const plotHeight = rows.length * groupHeight
  const parts: Array<string> = [
    `<text x="${LABEL_WIDTH}" y="${top + 14}" class="title">${escapeXml(spec.title)}</text>`
  ]
  for (let decade = lo; decade <= hi; decade++) {
    const gx = LABEL_WIDTH + ((decade - lo) / (hi - lo)) * PLOT_WIDTH
    parts.push(
      `<line x1="${gx.toFixed(1)}" y1="${plotTop}" x2="${gx.toFixed(1)}" y2="${plotTop + plotHeight}" class="grid"/>`,
      `<text x="${gx.toFixed(1)}" y="${plotTop + plotHeight + 14}" class="axis">${tick(decade)}</text>`
    )
  }
  rows.forEach((row, i) => {
    const gy = plotTop + i * groupHeight
    parts.push(`<text x="${LABEL_WIDTH - 8}" y="${gy + BAR + 4}" class="label">${escapeXml(row.scenario.title)}</text>`)
    ;(["gatehouse", "minimal"] as const).forEach((side, j) => {
      const value = spec.value(row, side)
      const width = x(value)
      const y = gy + j * BAR
      parts.push(
        `<rect x="${LABEL_WIDTH}" y="${y}" width="${width.toFixed(1)}" height="${BAR - 2}" fill="${COLORS[side]}" ` +
          `class="bar ${side}" data-scenario="${escapeXml(row.scenario.id)}"><title>${escapeXml(`${row.scenario.title}, ${side}: ${formatNumber(value)}`)}</title></rect>`,
        `<text x="${(LABEL_WIDTH + width + 4).toFixed(1)}" y="${y + BAR - 3}" class="value">${formatNumber(value)}</text>`
      )
    })
  })
  return { svg: parts.join("\n"), height: 26 + plotHeight + 24 }
}

/** Two panels, req/s and p99 per scenario, Gatehouse's bar above the minimal server's; a standalone SVG document. */
export const svgChart = (rows: ReadonlyArray<ScenarioRow>, subtitle: string): string => {
  const throughput = panel(rows, { title: "Requests per second (log scale; longer is better)", value: (r, s) => r[s].reqPerSec }, PANEL_TOP)
  const latency = panel(rows, { title: "p99 latency in ms (log scale; shorter is better)", value: (r, s) => r[s].p99 }, PANEL_TOP + throughput.height + 16)
  const height = PANEL_TOP + throughput.height + 16 + latency.height + 10
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<style>.title{font-weight:bold}.label{text-anchor:end}.axis{text-anchor:middle;fill:#555;font-size:10px}.grid{stroke:#ddd}.value{fill:#333;font-size:10px}</style>`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="10" y="18" class="title">Gatehouse vs the minimal server</text>`,
    `<text x="10" y="34" fill="#555">${escapeXml(subtitle)}</text>`,
    `<rect x="${LABEL_WIDTH + PLOT_WIDTH - 150}" y="8" width="12" height="12" fill="${COLORS.gatehouse}"/>`,
    `<text x="${LABEL_WIDTH + PLOT_WIDTH - 134}" y="18">Gatehouse</text>`,
    `<rect x="${LABEL_WIDTH + PLOT_WIDTH - 60}" y="8" width="12" height="12" fill="${COLORS.minimal}"/>`,
    `<text x="${LABEL_WIDTH + PLOT_WIDTH - 44}" y="18">minimal</text>`,
    throughput.svg,
    latency.svg,
    `</svg>`,
    ""
  ].join("\n")
}
