#!/usr/bin/env node
/**
 * `node scripts/ci-tally.mjs <report>...`: adds up the tests that `.ci/run`'s runs executed and prints one plain line,
 * `tests: N passed, N failed, N skipped`, which CI reads (it does not read vitest's own closing lines).
 *
 * A report is vitest's JSON (`--reporter=json`) or a JUnit XML file (Schemathesis' `--report junit`). A report that
 * is missing or unreadable counts as one failed test, so a run that died before reporting (a type error, a build
 * failure) can never add up to "0 failed".
 */
import { readFileSync } from "node:fs"

let passed = 0
let failed = 0
let skipped = 0

for (const path of process.argv.slice(2)) {
  try {
    const text = readFileSync(path, "utf8")
    if (path.endsWith(".json")) {
      const report = JSON.parse(text)
      const counts = ["numPassedTests", "numFailedTests", "numPendingTests", "numTodoTests", "numTotalTests"]
      if (!counts.every((field) => Number.isInteger(report[field]))) throw new Error("not a vitest JSON report")
      passed += report.numPassedTests
      failed += report.numFailedTests
      skipped += report.numPendingTests + report.numTodoTests
      if (report.numTotalTests === 0 || report.success === false && report.numFailedTests === 0) failed += 1
    } else {
      // One block per test case: a self-closing <testcase/> passed; otherwise what it holds says how it ended.
      const blocks = text.split(/<testcase\b/).slice(1).map((block) => {
        const head = block.slice(0, block.indexOf(">") + 1)
        return head.endsWith("/>") ? "" : block.slice(0, block.indexOf("</testcase>"))
      })
      const cases = blocks.length
      const bad = blocks.filter((block) => /<(failure|error)\b/.test(block)).length
      const skip = blocks.filter((block) => !/<(failure|error)\b/.test(block) && /<skipped\b/.test(block)).length
      if (cases === 0) throw new Error("no test cases")
      passed += cases - bad - skip
      failed += bad
      skipped += skip
    }
  } catch (error) {
    console.error(`ci-tally: ${path} is missing or unreadable (${error.message}); counted as one failed test`)
    failed += 1
  }
}

console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`)
