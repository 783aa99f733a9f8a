/**
 * Which GoTrue (Supabase Auth) made a database, read from its own migration record, `auth.schema_migrations`: one row
 * per migration file it applied, named by the file's timestamp. A release is known by its newest migration; many
 * releases share one (a release that changed no table adds none), so the answer is a range of releases.
 *
 * The table was read from the tags of the repository supabase/auth (the newest `migrations/*.up.sql` of each v2 tag).
 * Gatehouse is tested on a database GoTrue v2.196.0 made (shared/fixtures/gotrue-v2.196); a newer GoTrue may have
 * changed tables Gatehouse reads, so it gets a warning, not a refusal (its columns are only ever added to).
 */
export interface GoTrueRelease {
  readonly newestMigration: string
  readonly first: string
  readonly last: string
}

const RELEASES: ReadonlyArray<readonly [newestMigration: string, first: string, last: string]> = [
  ["20210710035447", "v2.0.0", "v2.0.1"],
  ["20210722035447", "v2.0.2", "v2.0.10"],
  ["20210730183235", "v2.0.11", "v2.1.10"],
  ["20210909172000", "v2.1.11", "v2.2.4"],
  ["20211122151130", "v2.2.5", "v2.2.6"],
  ["20211124214934", "v2.2.7", "v2.2.10"],
  ["20211202183645", "v2.2.11", "v2.3.10"],
  ["20220114185340", "v2.4.0", "v2.5.13"],
  ["20220224000811", "v2.5.14", "v2.6.3"],
  ["20220320143831", "v2.6.4", "v2.6.11"],
  ["20220323170000", "v2.6.12", "v2.6.21"],
  ["20220412150300", "v2.6.22", "v2.6.23"],
  ["20220429010200", "v2.6.24", "v2.6.26"],
  ["20220429102000", "v2.6.27", "v2.6.30"],
  ["20220531120530", "v2.6.31", "v2.6.35"],
  ["20220614074223", "v2.6.36", "v2.15.1"],
  ["20220811173540", "v2.15.2", "v2.17.3"],
  ["20221003041400", "v2.17.4", "v2.17.5"],
  ["20221011041400", "v2.18.0", "v2.19.2"],
  ["20221021073300", "v2.19.3", "v2.20.0"],
  ["20221021082433", "v2.21.0", "v2.22.2"],
  ["20221027105023", "v2.23.0", "v2.30.4"],
  ["20221114143410", "v2.30.5", "v2.33.2"],
  ["20221125140132", "v2.33.3", "v2.33.3"],
  ["20221125141029", "v2.34.0", "v2.37.4"],
  ["20221202110421", "v2.38.0", "v2.38.1"],
  ["20221208132122", "v2.38.2", "v2.39.0"],
  ["20221215195900", "v2.40.0", "v2.40.3"],
  ["20230116124412", "v2.41.0", "v2.42.1"],
  ["20230131181311", "v2.42.2", "v2.54.0"],
  ["20230322519590", "v2.55.0", "v2.57.2"],
  ["20230402418590", "v2.58.0", "v2.60.2"],
  ["20230411005111", "v2.60.3", "v2.65.1"],
  ["20230508135423", "v2.66.0", "v2.68.0"],
  ["20230523124323", "v2.69.0", "v2.92.1"],
  ["20230818113222", "v2.93.0", "v2.95.2"],
  ["20230914180801", "v2.96.0", "v2.107.0"],
  ["20231027141322", "v2.108.0", "v2.112.0"],
  ["20231114161723", "v2.113.0", "v2.115.1"],
  ["20231117164230", "v2.116.0", "v2.143.1"],
  ["20240214120130", "v2.144.0", "v2.144.0"],
  ["20240314092811", "v2.144.1", "v2.150.1"],
  ["20240427152123", "v2.151.0", "v2.153.0"],
  ["20240612123726", "v2.154.0", "v2.157.1"],
  ["20240729123726", "v2.158.0", "v2.158.0"],
  ["20240802193726", "v2.158.1", "v2.158.1"],
  ["20240806073726", "v2.159.0", "v2.162.2"],
  ["20241009103726", "v2.163.0", "v2.177.0"],
  ["20250717082212", "v2.178.0", "v2.178.0"],
  ["20250731150234", "v2.179.0", "v2.179.0"],
  ["20250904133000", "v2.180.0", "v2.180.0"],
  ["20251007112900", "v2.181.0", "v2.182.1"],
  ["20251111201300", "v2.183.0", "v2.183.0"],
  ["20251201000000", "v2.184.0", "v2.185.0"],
  ["20260121000000", "v2.186.0", "v2.186.0"],
  ["20260219120000", "v2.187.0", "v2.187.0"],
  ["20260302000000", "v2.188.0", "v2.191.0"],
  ["20260625000000", "v2.192.0", "v2.196.0"],
]

export const GOTRUE_RELEASES: ReadonlyArray<GoTrueRelease> = RELEASES.map(([newestMigration, first, last]) => ({
  newestMigration,
  first,
  last
}))

/** The release whose database Gatehouse's adoption is tested on. */
export const TESTED_GOTRUE: GoTrueRelease = GOTRUE_RELEASES[GOTRUE_RELEASES.length - 1]!

export type GoTrueSchema =
  /** Exactly the schema of a known range of releases; `tested` when that range holds TESTED_GOTRUE. */
  | { readonly _tag: "Known"; readonly release: GoTrueRelease; readonly tested: boolean; readonly migrations: number }
  /** Migrations newer than the tested release's newest: a later GoTrue. */
  | { readonly _tag: "Newer"; readonly newestMigration: string; readonly unknown: ReadonlyArray<string>; readonly migrations: number }
  /** Migrations no release has (a fork, or hand-made rows), none newer than the tested release. */
  | { readonly _tag: "Unrecognised"; readonly newestMigration: string | undefined; readonly unknown: ReadonlyArray<string>; readonly migrations: number }

// GoTrue's record holds the 14-digit timestamps of its files, plus "00" for its first (00_init_auth_schema).
const TIMESTAMP = /^\d{14}$/

/**
 * Reads a GoTrue migration record. Only the release's newest migration is looked up; older ones a release also applied
 * are not checked one by one (the record is GoTrue's own and it applies them in order).
 */
export const recognizeGoTrue = (versions: ReadonlyArray<string>): GoTrueSchema => {
  const timestamps = versions.map((version) => version.trim()).filter((version) => TIMESTAMP.test(version)).sort()
  const newest = timestamps[timestamps.length - 1]
  const migrations = versions.length
  const newer = timestamps.filter((version) => version > TESTED_GOTRUE.newestMigration)
  if (newer.length > 0) return { _tag: "Newer", newestMigration: newest!, unknown: newer, migrations }
  const release = GOTRUE_RELEASES.find((candidate) => candidate.newestMigration === newest)
  if (release === undefined) {
    return { _tag: "Unrecognised", newestMigration: newest, unknown: newest === undefined ? [] : [newest], migrations }
  }
  return { _tag: "Known", release, tested: release === TESTED_GOTRUE, migrations }
}

/** "v2.192.0–v2.196.0", or one version where the range is one release. */
export const releaseRange = (release: GoTrueRelease): string =>
  release.first === release.last ? release.first : `${release.first}–${release.last}`

/** What an operator reads about the GoTrue schema found, and whether it deserves a warning. */
export const describeGoTrueSchema = (schema: GoTrueSchema): { readonly text: string; readonly warning: boolean } => {
  const tested = `GoTrue ${TESTED_GOTRUE.last}`
  switch (schema._tag) {
    case "Known":
      return schema.tested
        ? { text: `GoTrue ${releaseRange(schema.release)} (${schema.migrations} migrations; the tested schema)`, warning: false }
        : {
          text: `GoTrue ${releaseRange(schema.release)} (${schema.migrations} migrations), older than ${tested}, the release ` +
            `Gatehouse is tested on: run ${tested}'s migrations (its \`auth migrate\`) first for the tested path`,
          warning: true
        }
    case "Newer":
      return {
        text: `a GoTrue newer than ${tested}, the release Gatehouse is tested on (migrations ${schema.unknown.join(", ")} ` +
          `are unknown to it): Gatehouse only adds to GoTrue's tables, but columns a newer GoTrue added or changed are ` +
          `neither read nor kept up to date; check the release notes before switching`,
        warning: true
      }
    case "Unrecognised":
      return {
        text: `a GoTrue migration record no release has (newest ${schema.newestMigration ?? "none"}; ` +
          `${schema.migrations} rows): Gatehouse is tested on ${tested}'s schema`,
        warning: true
      }
  }
}

/** What an adopted GoTrue database holds, for the operator's report. */
export interface AdoptedRows {
  readonly users: number
  readonly anonymous: number
  readonly banned: number
  readonly softDeleted: number
  readonly identities: number
  readonly liveSessions: number
  readonly aal2Sessions: number
  readonly gotrueRefreshTokens: number
  readonly verifiedFactors: number
  readonly pendingLinks: number
  /** SAML SSO providers, served as GoTrue serves them (with SAML_ENABLED). */
  readonly ssoProviders: number
  /** The OAuth 2.1 server's clients (not deleted), which Gatehouse serves as GoTrue does. */
  readonly oauthClients: number
}

const counted = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** The report's line: what was found (every kind of row GoTrue makes is served, so none is a warning). */
export const describeAdoptedRows = (rows: AdoptedRows): string =>
  `GoTrue's rows: ${counted(rows.users, "user")} (${rows.anonymous} anonymous, ${rows.banned} banned, ` +
    `${rows.softDeleted} soft-deleted), ${counted(rows.identities, "identity", "identities")}, ` +
    `${counted(rows.liveSessions, "live session")} (${rows.aal2Sessions} at aal2) with ` +
    `${counted(rows.gotrueRefreshTokens, "refresh token")} in GoTrue's format, ${counted(rows.verifiedFactors, "verified factor")}, ` +
    `${counted(rows.pendingLinks, "pending link")}` +
    `${rows.ssoProviders > 0 ? `, ${counted(rows.ssoProviders, "SAML SSO provider")}` : ""}` +
    `${rows.oauthClients > 0 ? `, ${counted(rows.oauthClients, "OAuth client")}` : ""}`
