import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { lazyModule, ModuleLoadError } from "../../src/platform/LazyModule.js"

describe("lazyModule", () => {
  it.effect("imports on the first use only, and once however many use it at the same time", () =>
    Effect.gen(function*() {
      let imports = 0
      const module = lazyModule("a module", async () => {
        imports++
        return { value: 42 }
      })
      expect(imports).toBe(0)
      const loaded = yield* Effect.all([module, module, module], { concurrency: "unbounded" })
      expect(loaded.map((m) => m.value)).toStrictEqual([42, 42, 42])
      expect(yield* module).toBe(loaded[0])
      expect(imports).toBe(1)
    }))

  it.effect("a failed import fails (not dies) with a ModuleLoadError naming the module, and is tried again on the next use", () =>
    Effect.gen(function*() {
      let attempts = 0
      const module = lazyModule("the thing", async () => {
        attempts++
        if (attempts === 1) throw new Error("Cannot find module 'thing'")
        return "loaded"
      })
      const failed = yield* Effect.exit(module)
      expect(failed).toStrictEqual(Exit.fail(new ModuleLoadError({ message: "could not load the thing: Cannot find module 'thing'", cause: new Error("Cannot find module 'thing'") })))
      expect(yield* module).toBe("loaded")
      expect(attempts).toBe(2)
    }))

  it.effect("loads a real module by a dynamic import", () =>
    Effect.gen(function*() {
      const os = yield* lazyModule("node:os", () => import("node:os"))
      expect(typeof os.cpus).toBe("function")
    }))
})
