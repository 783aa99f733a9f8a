import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { WORKER_HEAP_GROWING_PERCENT, workerExecArgv } from "../../src/platform/process/YoungGeneration.js"

const GROWTH = `--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}`

// Node options that say nothing of the old generation's growth.
const otherOption = FastCheck.constantFrom(
  "--enable-source-maps", "--inspect=0", "--max-old-space-size=512", "--max-semi-space-size=4", "--import=./x.mjs", "--no-warnings"
)

describe("workerExecArgv", () => {
  it("adds the old generation's growth after the primary's node options", () => {
    expect(workerExecArgv([])).toStrictEqual([GROWTH])
    expect(workerExecArgv(["--enable-source-maps"])).toStrictEqual(["--enable-source-maps", GROWTH])
  })

  it("keeps the operator's choice, in either spelling", () => {
    expect(workerExecArgv(["--heap-growing-percent=0"])).toStrictEqual(["--heap-growing-percent=0"])
    expect(workerExecArgv(["--heap_growing_percent", "50"])).toStrictEqual(["--heap_growing_percent", "50"])
  })

  it.prop("never drops or reorders an option, and adds the growth exactly when none is chosen", [
    FastCheck.array(otherOption),
    FastCheck.boolean()
  ], ([execArgv, chosen]) => {
    const argv = chosen ? [...execArgv, "--heap-growing-percent=50"] : execArgv
    const result = workerExecArgv(argv)
    expect(result.slice(0, argv.length)).toStrictEqual(argv)
    expect(result.slice(argv.length)).toStrictEqual(chosen ? [] : [GROWTH])
  })
})
