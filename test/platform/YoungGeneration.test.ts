import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { WORKER_SEMI_SPACE_MB, workerExecArgv } from "../../src/platform/process/YoungGeneration.js"

const CAP = `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`

// Node options that say nothing of the semi-space.
const otherOption = FastCheck.constantFrom("--enable-source-maps", "--inspect=0", "--max-old-space-size=512", "--import=./x.mjs", "--no-warnings")

describe("workerExecArgv", () => {
  it("adds the semi-space cap to the primary's node options, in their order", () => {
    expect(workerExecArgv([], undefined)).toStrictEqual([CAP])
    expect(workerExecArgv(["--enable-source-maps"], "")).toStrictEqual(["--enable-source-maps", CAP])
  })

  it("keeps the operator's choice, on the command line or in NODE_OPTIONS, in either spelling", () => {
    expect(workerExecArgv(["--max-semi-space-size=16"], undefined)).toStrictEqual(["--max-semi-space-size=16"])
    expect(workerExecArgv(["--max_semi_space_size", "8"], undefined)).toStrictEqual(["--max_semi_space_size", "8"])
    expect(workerExecArgv(["--enable-source-maps"], "--no-warnings --max-semi-space-size=32")).toStrictEqual(["--enable-source-maps"])
  })

  it.prop("never drops or reorders an option, and adds the cap exactly when none is chosen", [
    FastCheck.array(otherOption),
    FastCheck.array(otherOption).map((options) => options.join(" ")),
    FastCheck.boolean()
  ], ([execArgv, nodeOptions, chosen]) => {
    const argv = chosen ? [...execArgv, "--max-semi-space-size=2"] : execArgv
    const result = workerExecArgv(argv, nodeOptions)
    expect(result.slice(0, argv.length)).toStrictEqual(argv)
    expect(result.slice(argv.length)).toStrictEqual(chosen ? [] : [CAP])
  })
})
