import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { describeFinding, type DoctorFinding, doctorVerdict, isBlocking } from "../auth/domain/GoTrueReadable.js"
import { GoTrueReadableRepo } from "../auth/users/GoTrueReadableRepo.js"
import type { DatabaseSettings } from "../config/PlatformConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { databaseFor } from "./StartupWork.js"

// A finding worth a line: a problem, or a note with something in it. The rest are columns that passed.
const worthALine = (finding: DoctorFinding): boolean =>
  isBlocking(finding) || (finding._tag === "SessionsNotRefreshable" && finding.sessions > 0) || finding._tag === "RowCounts"

/**
 * `doctor`: whether GoTrue v2.196, started on this database, could read every row Gatehouse (or anyone) left there.
 * Read-only; prints counts, never a value. Returns the exit code: 0 when GoTrue can read everything, 1 otherwise.
 */
export const doctorCommand = (config: DatabaseSettings): Effect.Effect<0 | 1> =>
  Effect.gen(function*() {
    const repo = yield* GoTrueReadableRepo
    const findings = yield* repo.findings(config.db.namespace, new Date(yield* Clock.currentTimeMillis))
    const verdict = doctorVerdict(findings)
    yield* Effect.forEach(findings.filter(worthALine), (finding) => Console.log(describeFinding(finding)))
    yield* Console.log(verdict.summary)
    return verdict.exitCode
  }).pipe(
    Effect.provide(GoTrueReadableRepo.Default),
    Effect.provide(databaseFor(config, { wait: "2 minutes", holder: "command" })),
    Effect.catchAll((error) => Effect.as(Console.error(`doctor failed: ${error.message}`), 1 as const)),
    Effect.provide(LoggingLive(config.log))
  )
