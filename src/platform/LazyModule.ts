import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

/** A module imported on first use could not be loaded (a broken install, a missing file). */
export class ModuleLoadError extends Data.TaggedError("ModuleLoadError")<{ readonly message: string; readonly cause: unknown }> {}

/**
 * A module imported on first use rather than at start-up: for the parts most servers never run (the IAM service when it
 * is off, SAML, mail, …), which would otherwise cost every process their code and heap from the start.
 * - Loaded once: after the first success the module is at hand with no import and no promise, so a hot path that
 *   reaches it pays nothing per request.
 * - A failed import fails with ModuleLoadError naming `what` (never a defect): at start-up the process says
 *   "start-up failed: could not load …" and exits, in a request the failure is logged. It is tried again on the next
 *   use, as a fresh start would.
 */
export const lazyModule = <A>(what: string, load: () => Promise<A>): Effect.Effect<A, ModuleLoadError> => {
  let loaded: { readonly module: A } | undefined
  let loading: Promise<A> | undefined
  const importing = Effect.tryPromise({
    try: () =>
      (loading ??= load().then(
        (module) => {
          loaded = { module }
          return module
        },
        (error: unknown) => {
          loading = undefined
          throw error
        }
      )),
    catch: (cause) => new ModuleLoadError({ message: `could not load ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
  })
  return Effect.suspend(() => (loaded !== undefined ? Effect.succeed(loaded.module) : importing))
}
