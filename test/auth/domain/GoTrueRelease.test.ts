import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  describeAdoptedRows,
  describeGoTrueSchema,
  GOTRUE_RELEASES,
  recognizeGoTrue,
  releaseRange,
  TESTED_GOTRUE
} from "../../../src/auth/domain/GoTrueRelease.js"

// The record real GoTrue v2.196.0 left in shared/fixtures/gotrue-v2.196 (its first and last rows; "00" is its init).
const FIXTURE_HEAD = ["00", "20210710035447", "20210722035447"]
const V2_196_NEWEST = "20260625000000"

const newestOf = (index: number) => GOTRUE_RELEASES[index]!.newestMigration
/** A record as GoTrue leaves it: every known newest migration up to a release's, rotated by `turn` (row order is free). */
const recordUpTo = (index: number, turn = 0) => {
  const rows = ["00", ...GOTRUE_RELEASES.slice(0, index + 1).map((release) => release.newestMigration)]
  const k = turn % rows.length
  return [...rows.slice(k), ...rows.slice(0, k)]
}

describe("GoTrue's releases", () => {
  it("are in the order of their newest migrations, each a 14-digit timestamp, and end with the tested v2.196.0", () => {
    const newest = GOTRUE_RELEASES.map((release) => release.newestMigration)
    expect(newest).toEqual([...newest].sort())
    expect(new Set(newest).size).toBe(newest.length)
    expect(newest.every((version) => /^\d{14}$/.test(version))).toBe(true)
    expect(TESTED_GOTRUE).toEqual({ newestMigration: V2_196_NEWEST, first: "v2.192.0", last: "v2.196.0" })
    expect(releaseRange(TESTED_GOTRUE)).toBe("v2.192.0–v2.196.0")
    expect(releaseRange({ newestMigration: "x", first: "v2.187.0", last: "v2.187.0" })).toBe("v2.187.0")
  })

  it("the fixture's record is the tested schema, without a warning", () => {
    const schema = recognizeGoTrue([...FIXTURE_HEAD, "20250904133000", V2_196_NEWEST])
    expect(schema).toMatchObject({ _tag: "Known", tested: true, migrations: 5 })
    expect(describeGoTrueSchema(schema)).toEqual({
      text: "GoTrue v2.192.0–v2.196.0 (5 migrations; the tested schema)",
      warning: false
    })
  })

  it.prop("a record ending at any known release is that release, whatever the row order; older ones are warned about", [
    FastCheck.integer({ min: 0, max: GOTRUE_RELEASES.length - 1 }),
    FastCheck.nat()
  ], ([index, turn]) => {
    const schema = recognizeGoTrue(recordUpTo(index, turn))
    expect(schema).toMatchObject({ _tag: "Known", release: GOTRUE_RELEASES[index] })
    const tested = index === GOTRUE_RELEASES.length - 1
    expect(describeGoTrueSchema(schema).warning).toBe(!tested)
    if (!tested) expect(describeGoTrueSchema(schema).text).toContain("older than GoTrue v2.196.0")
  })

  it.prop("any migration newer than the tested release's makes it a newer GoTrue, named in the warning", [
    FastCheck.integer({ min: 20260625000001, max: 20991231235959 })
  ], ([later]) => {
    const schema = recognizeGoTrue([...recordUpTo(GOTRUE_RELEASES.length - 1), String(later)])
    expect(schema).toMatchObject({ _tag: "Newer", newestMigration: String(later), unknown: [String(later)] })
    const { text, warning } = describeGoTrueSchema(schema)
    expect(warning).toBe(true)
    expect(text).toContain("newer than GoTrue v2.196.0")
    expect(text).toContain(String(later))
  })

  it.prop("a newest migration no release has, and none newer than the tested one, is unrecognised", [
    FastCheck.integer({ min: Number(newestOf(0)) + 1, max: Number(V2_196_NEWEST) - 1 }).filter((n) =>
      !GOTRUE_RELEASES.some((release) => release.newestMigration === String(n)))
  ], ([odd]) => {
    const schema = recognizeGoTrue([...recordUpTo(0), String(odd)])
    expect(schema).toMatchObject({ _tag: "Unrecognised", newestMigration: String(odd), unknown: [String(odd)], migrations: 3 })
    expect(describeGoTrueSchema(schema).warning).toBe(true)
  })

  it("an empty record, or one of GoTrue's init alone, is unrecognised and warned about", () => {
    expect(recognizeGoTrue([])).toMatchObject({ _tag: "Unrecognised", newestMigration: undefined, migrations: 0 })
    expect(describeGoTrueSchema(recognizeGoTrue(["00"])).warning).toBe(true)
    // Padded rows (GoTrue's column is varchar(14); a hand-made record may hold spaces) are read trimmed.
    expect(recognizeGoTrue([` ${V2_196_NEWEST} `])).toMatchObject({ _tag: "Known", tested: true })
  })
})

describe("describeAdoptedRows", () => {
  const rows = {
    users: 1, anonymous: 0, banned: 0, softDeleted: 0, identities: 1, liveSessions: 1, aal2Sessions: 0,
    gotrueRefreshTokens: 1, verifiedFactors: 1, pendingLinks: 1, ssoProviders: 0, oauthClients: 0
  }

  it("counts in the singular and the plural", () => {
    expect(describeAdoptedRows(rows)).toEqual(
      "GoTrue's rows: 1 user (0 anonymous, 0 banned, 0 soft-deleted), 1 identity, 1 live session (0 at aal2) with " +
        "1 refresh token in GoTrue's format, 1 verified factor, 1 pending link"
    )
    expect(describeAdoptedRows({ ...rows, users: 2, identities: 3 })).toMatch(/^GoTrue's rows: 2 users .*, 3 identities, /)
  })

  it.prop("counts SAML providers and OAuth clients with the rows found (both are served: no warning)", [FastCheck.nat(), FastCheck.nat()], ([sso, clients]) => {
    const found = describeAdoptedRows({ ...rows, ssoProviders: sso, oauthClients: clients })
    if (sso === 0) expect(found).not.toContain("SAML")
    else expect(found).toContain(`, ${sso} SAML SSO provider${sso === 1 ? "" : "s"}`)
    if (clients === 0) expect(found).not.toContain("OAuth")
    else expect(found).toMatch(new RegExp(`, ${clients} OAuth clients?$`))
  })
})
