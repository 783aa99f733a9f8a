import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import {
  describeFinding,
  type DoctorFinding,
  doctorVerdict,
  GOTRUE_LEGACY_TOKEN_PATTERN,
  GOTRUE_READABLE,
  isBlocking,
  ROW_COUNT_TRIGGERS,
  rowCountFindings
} from "../../../src/auth/domain/GoTrueReadable.js"
import { deriveRefreshToken, isGoTrueLegacyToken, refreshTokenKey } from "../../../src/auth/sessions/RefreshTokenCodec.js"

const name = FastCheck.constantFrom(...GOTRUE_READABLE.map((t) => t.table))
const finding: FastCheck.Arbitrary<DoctorFinding> = FastCheck.oneof(
  FastCheck.record({ _tag: FastCheck.constant("NullInRequired" as const), table: name, column: FastCheck.string(), rows: FastCheck.nat(), why: FastCheck.string() }),
  FastCheck.record({ _tag: FastCheck.constant("Unparsable" as const), table: name, column: FastCheck.string(), rows: FastCheck.nat(), why: FastCheck.string() }),
  FastCheck.record({ _tag: FastCheck.constant("MissingColumn" as const), table: name, column: FastCheck.string() }),
  FastCheck.record({ _tag: FastCheck.constant("MissingTable" as const), table: name }),
  FastCheck.record({ _tag: FastCheck.constant("NoGoTrueHistory" as const) }),
  FastCheck.record({ _tag: FastCheck.constant("SessionsNotRefreshable" as const), sessions: FastCheck.nat() })
)

describe("GoTrueReadable: the audit of what GoTrue v2.196 cannot read", () => {
  it("names only tables Gatehouse knows, each once, each column once per list, with a reason", () => {
    const known = Object.keys(authTables(""))
    expect(new Set(GOTRUE_READABLE.map((t) => t.table)).size).toBe(GOTRUE_READABLE.length)
    for (const table of GOTRUE_READABLE) {
      expect(known).toContain(table.table)
      expect(new Set(table.required.map((c) => c.column)).size).toBe(table.required.length)
      for (const column of [...table.required, ...table.parsed]) expect(column.why.length).toBeGreaterThan(0)
    }
  })

  it("every parsed column says what is allowed, as values the repo can pass comma-separated", () => {
    for (const column of GOTRUE_READABLE.flatMap((t) => t.parsed)) {
      expect(column.values !== undefined || column.pattern !== undefined).toBe(true)
      for (const value of column.values ?? []) expect(value).toMatch(/^[a-z0-9_]+$/)
    }
  })

  it("the users' token columns GoTrue reads into plain strings are all listed (a NULL there is its 500)", () => {
    const users = GOTRUE_READABLE.find((t) => t.table === "users")!.required.map((c) => c.column)
    for (const column of ["instance_id", "aud", "role", "confirmation_token", "recovery_token", "email_change_token_new",
      "email_change_token_current", "email_change", "phone_change", "phone_change_token", "reauthentication_token",
      "email_change_confirm_status"]) expect(users).toContain(column)
  })

  it.prop("the exit code is 1 exactly when a finding blocks, and a sessions note never does", [FastCheck.array(finding)], ([findings]) => {
    const verdict = doctorVerdict(findings)
    expect(verdict.exitCode).toBe(findings.some(isBlocking) ? 1 : 0)
    expect(findings.filter((f) => f._tag === "SessionsNotRefreshable").some(isBlocking)).toBe(false)
    expect(verdict.summary.startsWith("doctor: ")).toBe(true)
  })

  it.prop("a count of zero rows is no problem; a missing table, column or GoTrue history always is", [finding], ([f]) => {
    const expected = f._tag === "MissingTable" || f._tag === "MissingColumn" || f._tag === "NoGoTrueHistory" ? true
      : f._tag === "SessionsNotRefreshable" ? false
      : f._tag === "RowCounts" ? f.problem._tag === "TableMissing"
      : f.rows > 0
    expect(isBlocking(f)).toBe(expected)
  })

  it.prop("each finding is one line naming its table", [finding], ([f]) => {
    const line = describeFinding(f)
    expect(line.includes("\n")).toBe(false)
    expect(line).toMatch(/^(FAIL|NOTE) /)
    expect(line).toContain(f._tag === "SessionsNotRefreshable" ? "sessions" : f._tag === "NoGoTrueHistory" ? "schema_migrations" : f.table)
  })

  it.prop("the legacy pattern the repo runs in SQL is the codec's rule", [FastCheck.string({ maxLength: 14 })], ([token]) => {
    expect(new RegExp(GOTRUE_LEGACY_TOKEN_PATTERN).test(token)).toBe(isGoTrueLegacyToken(token))
  })

  it.prop("no Gatehouse refresh token is ever in GoTrue's legacy form", [FastCheck.string(), FastCheck.uuid(), FastCheck.nat()], ([secret, session, row]) => {
    const token = deriveRefreshToken(refreshTokenKey(secret), session, String(row))
    expect(new RegExp(GOTRUE_LEGACY_TOKEN_PATTERN).test(token)).toBe(false)
  })

  describe("the count table (migration 0024)", () => {
    const all = (["users", "audit_log_entries"] as const).flatMap((table) => ROW_COUNT_TRIGGERS[table].map((name) => ({ table, name })))
    const counted = [{ table: "users" as const, counted: 3, actual: 3 }, { table: "audit_log_entries" as const, counted: 9, actual: 9 }]

    it("says nothing of a database 0024 never ran on, nor of a sound one", () => {
      expect(rowCountFindings({ tablePresent: false, triggers: [], sums: [] })).toEqual([])
      expect(rowCountFindings({ tablePresent: true, triggers: all, sums: counted })).toEqual([])
    })

    it("the table gone under its triggers blocks (every write fails); a missing trigger or a drift is a note", () => {
      const gone = rowCountFindings({ tablePresent: false, triggers: all.slice(0, 1), sums: [] })
      expect(gone.map(isBlocking)).toEqual([true])
      expect(describeFinding(gone[0]!)).toMatch(/^FAIL gatehouse_row_counts: /)
      const partial = rowCountFindings({
        tablePresent: true,
        triggers: all.filter((t) => !(t.table === "users" && t.name === "gatehouse_count_aud")),
        sums: [{ table: "audit_log_entries", counted: 8, actual: 9 }]
      })
      expect(partial).toEqual([
        { _tag: "RowCounts", table: "users", problem: { _tag: "TriggersMissing", triggers: ["gatehouse_count_aud"] } },
        { _tag: "RowCounts", table: "audit_log_entries", problem: { _tag: "Drift", counted: 8, actual: 9 } }
      ])
      expect(partial.some(isBlocking)).toBe(false)
      expect(partial.map(describeFinding).every((line) => line.startsWith("NOTE ") && !line.includes("\n"))).toBe(true)
      expect(doctorVerdict(partial).exitCode).toBe(0)
    })
  })
})
