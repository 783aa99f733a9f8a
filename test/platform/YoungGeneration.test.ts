import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { WORKER_HEAP_GROWING_PERCENT, WORKER_SEMI_SPACE_MB, workerExecArgv } from "../../src/platform/process/YoungGeneration.js"

const CAP = `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`
const GROWTH = `--heap-growing-percent=${WORKER_HEAP_GROWING_PERCENT}`

// Node options that say nothing of the semi-space.
const otherOption = FastCheck.constantFrom("--enable-source-maps", "--inspect=0", "--max-old-space-size=512", "--import=./x.mjs", "--no-warnings")

describe("workerExecArgv", () => {
  it("adds the semi-space cap and the old generation's growth to the primary's node options, after them", () => {
    expect(workerExecArgv([], undefined)).toStrictEqual([CAP, GROWTH])
    expect(workerExecArgv(["--enable-source-maps"], "")).toStrictEqual(["--enable-source-maps", CAP, GROWTH])
  })

  it("keeps the operator's choice, on the command line or in NODE_OPTIONS, in either spelling", () => {
    expect(workerExecArgv(["--max-semi-space-size=16"], undefined)).toStrictEqual(["--max-semi-space-size=16", GROWTH])
    expect(workerExecArgv(["--max_semi_space_size", "8"], undefined)).toStrictEqual(["--max_semi_space_size", "8", GROWTH])
    expect(workerExecArgv(["--enable-source-maps"], "--no-warnings --max-semi-space-size=32")).toStrictEqual(["--enable-source-maps", GROWTH])
    expect(workerExecArgv(["--heap-growing-percent=0"], undefined)).toStrictEqual(["--heap-growing-percent=0", CAP])
  })

  it.prop("never drops or reorders an option, and adds the cap exactly when none is chosen (the growth always here)", [
    FastCheck.array(otherOption),
    FastCheck.array(otherOption).map((options) => options.join(" ")),
    FastCheck.boolean()
  ], ([execArgv, nodeOptions, chosen]) => {
    const argv = chosen ? [...execArgv, "--max-semi-space-size=2"] : execArgv
    const result = workerExecArgv(argv, nodeOptions)
    expect(result.slice(0, argv.length)).toStrictEqual(argv)
    expect(result.slice(argv.length)).toStrictEqual(chosen ? [GROWTH] : [CAP, GROWTH])
  })
})
