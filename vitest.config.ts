import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup.ts"],
    // PGlite start-up (initdb in wasm) takes seconds; real work is bounded by per-test timeouts.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run in parallel, but each PGlite costs ~800 MB and a core.
    maxWorkers: 2,
    minWorkers: 1
  }
})
