import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { WORKER_HEAP_GROWING_PERCENT, WORKER_SEMI_SPACE_MB, workerExecArgv } from "../../src/platform/process/YoungGeneration.js"

const GROWTH = `--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}`
const SEMI = `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`

// Node options that say nothing of either generation's size.
const otherOption = FastCheck.constantFrom(
  "--enable-source-maps", "--inspect=0", "--max-old-space-size=512", "--import=./x.mjs", "--no-warnings", "--semi-space-growth-factor=2"
)

describe("workerExecArgv", () => {
  it("adds the old generation's growth and the semi-space cap after the primary's node options", () => {
    expect(workerExecArgv([])).toStrictEqual([GROWTH, SEMI])
    expect(workerExecArgv(["--enable-source-maps"], "--no-warnings")).toStrictEqual(["--enable-source-maps", GROWTH, SEMI])
  })

  it("keeps the operator's choice, in either spelling, on the command line or (the cap) in NODE_OPTIONS", () => {
    expect(workerExecArgv(["--heap-growing-percent=0"])).toStrictEqual(["--heap-growing-percent=0", SEMI])
    expect(workerExecArgv(["--heap_growing_percent", "50"])).toStrictEqual(["--heap_growing_percent", "50", SEMI])
    expect(workerExecArgv(["--max-semi-space-size=16"])).toStrictEqual(["--max-semi-space-size=16", GROWTH])
    expect(workerExecArgv(["--max_semi_space_size", "2"])).toStrictEqual(["--max_semi_space_size", "2", GROWTH])
    // A worker inherits NODE_OPTIONS; a cap on its command line would override the operator's there.
    expect(workerExecArgv([], "--enable-source-maps  --max-semi-space-size=4")).toStrictEqual([GROWTH])
  })

  it.prop("never drops or reorders an option, and adds each setting exactly when the operator chose none", [
    FastCheck.array(otherOption),
    FastCheck.boolean(),
    FastCheck.constantFrom("none", "argv", "NODE_OPTIONS")
  ], ([execArgv, growthChosen, semiChosen]) => {
    const argv = [...execArgv, ...(growthChosen ? ["--heap-growing-percent=50"] : []), ...(semiChosen === "argv" ? ["--max-semi-space-size=32"] : [])]
    const nodeOptions = semiChosen === "NODE_OPTIONS" ? "--no-deprecation --max-semi-space-size=32" : "--no-deprecation"
    const result = workerExecArgv(argv, nodeOptions)
    expect(result.slice(0, argv.length)).toStrictEqual(argv)
    expect(result.slice(argv.length)).toStrictEqual([...(growthChosen ? [] : [GROWTH]), ...(semiChosen === "none" ? [SEMI] : [])])
  })
})
