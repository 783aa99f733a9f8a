/**
 * What GoTrue v2.196 needs of the rows in its `auth` schema to read them at all: the way back from Gatehouse to
 * GoTrue on one database. GoTrue loads whole rows into Go structs; a NULL in a column it scans into a plain Go type
 * (string, bool, int, time.Time, uuid.UUID) fails the scan, so the whole query fails and the request answers 500
 * ("Database error querying schema"), for every request that loads the row. A value outside a set GoTrue parses
 * fails the same way. Audited against internal/models (user.go, identity.go, sessions.go, refresh_token.go,
 * flow_state.go, factor.go, challenge.go, amr.go, one_time_token.go, audit_log_entry.go, webauthn_*.go, oauth_*.go).
 *
 * Columns whose Go type is a pointer, storage.NullString or a JSON type whose Scan accepts NULL (JSONMap,
 * WebAuthnSessionData, MFAWebAuthnCredential, WebAuthnTransports) are not listed: GoTrue reads NULL there.
 */

/** A column GoTrue scans into a non-pointer Go type, and why that matters for the row. */
export interface RequiredColumn {
  readonly column: string
  readonly why: string
}

/** A column whose value GoTrue parses: anything outside `values` (or not matching `pattern`) fails its read. */
export interface ParsedColumn {
  readonly column: string
  readonly values?: ReadonlyArray<string>
  /** A PostgreSQL regular expression the value must match (as text). */
  readonly pattern?: string
  readonly why: string
}

export interface GoTrueTable {
  readonly table: GoTrueTableName
  readonly required: ReadonlyArray<RequiredColumn>
  readonly parsed: ReadonlyArray<ParsedColumn>
}

export type GoTrueTableName =
  | "users"
  | "identities"
  | "sessions"
  | "refresh_tokens"
  | "mfa_amr_claims"
  | "flow_state"
  | "mfa_factors"
  | "mfa_challenges"
  | "one_time_tokens"
  | "audit_log_entries"
  | "webauthn_credentials"
  | "webauthn_challenges"
  | "oauth_clients"
  | "oauth_authorizations"
  | "oauth_consents"
  | "sso_providers"
  | "sso_domains"
  | "saml_providers"
  | "saml_relay_states"

const col = (column: string, why: string): RequiredColumn => ({ column, why })
const uuidCol = (column: string) => col(column, "uuid.UUID: its Scan refuses NULL")
const timeCol = (column: string) => col(column, "time.Time: database/sql cannot convert NULL to it")
const stringCol = (column: string, why = "string: GoTrue writes \"\" for none, and NULL fails the scan") => col(column, why)

const UUID_TEXT = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

/** The audit, as data: table by table, in the order GoTrue's models declare them. */
export const GOTRUE_READABLE: ReadonlyArray<GoTrueTable> = [
  {
    table: "users",
    required: [
      col("instance_id", "uuid.UUID DONTUSEINSTANCEID: GoTrue writes the nil UUID; NULL fails every user load"),
      uuidCol("id"),
      stringCol("aud"),
      stringCol("role"),
      col("is_sso_user", "bool"),
      stringCol("confirmation_token"),
      stringCol("recovery_token"),
      stringCol("email_change_token_current"),
      stringCol("email_change_token_new"),
      stringCol("email_change", "string (the pending new address): \"\" when none"),
      col("email_change_confirm_status", "int: 0 when no change is pending"),
      stringCol("phone_change_token"),
      stringCol("phone_change", "string (the pending new number): \"\" when none"),
      stringCol("reauthentication_token"),
      timeCol("created_at"),
      timeCol("updated_at"),
      col("is_anonymous", "bool")
    ],
    parsed: []
  },
  {
    table: "identities",
    required: [uuidCol("id"), stringCol("provider_id"), uuidCol("user_id"), stringCol("provider"), timeCol("created_at"), timeCol("updated_at")],
    parsed: []
  },
  {
    table: "sessions",
    required: [uuidCol("id"), uuidCol("user_id"), timeCol("created_at"), timeCol("updated_at")],
    parsed: [{ column: "aal", values: ["aal1", "aal2", "aal3"], why: "GoTrue compares the level by name to compute the JWT's aal" }]
  },
  {
    table: "refresh_tokens",
    required: [
      col("instance_id", "uuid.UUID, and GoTrue's FindTokenBySessionID matches instance_id = the nil UUID"),
      col("id", "int64"),
      stringCol("token", "string: the token itself; NULL fails every read of the user's tokens"),
      col("user_id", "uuid.UUID read from a varchar: NULL fails the scan"),
      col("revoked", "bool"),
      timeCol("created_at"),
      timeCol("updated_at")
    ],
    parsed: [{ column: "user_id", pattern: UUID_TEXT, why: "a varchar GoTrue parses as a UUID" }]
  },
  {
    table: "mfa_amr_claims",
    required: [uuidCol("id"), uuidCol("session_id"), timeCol("created_at"), timeCol("updated_at")],
    parsed: []
  },
  {
    table: "flow_state",
    required: [
      uuidCol("id"),
      stringCol("authentication_method"),
      stringCol("provider_type"),
      stringCol("provider_access_token", "string: \"\" for a flow with no provider (email, magic link)"),
      stringCol("provider_refresh_token", "string: \"\" for a flow with no provider or no provider refresh token"),
      timeCol("created_at"),
      timeCol("updated_at"),
      col("email_optional", "bool")
    ],
    parsed: [{ column: "code_challenge_method", values: ["s256", "plain"], why: "ParseCodeChallengeMethod refuses anything else" }]
  },
  {
    table: "mfa_factors",
    required: [
      uuidCol("id"),
      uuidCol("user_id"),
      timeCol("created_at"),
      timeCol("updated_at"),
      stringCol("status"),
      stringCol("friendly_name", "string: \"\" when the user gave no name"),
      stringCol("secret", "string: \"\" for phone and WebAuthn factors, which have no TOTP secret"),
      stringCol("factor_type")
    ],
    parsed: [
      { column: "status", values: ["unverified", "verified"], why: "GoTrue's factor states" },
      { column: "factor_type", values: ["totp", "phone", "webauthn"], why: "GoTrue's factor types" }
    ]
  },
  {
    table: "mfa_challenges",
    required: [
      uuidCol("id"),
      uuidCol("factor_id"),
      timeCol("created_at"),
      stringCol("ip_address"),
      stringCol("otp_code", "string: \"\" for TOTP and WebAuthn challenges, which text no code")
    ],
    parsed: []
  },
  {
    table: "one_time_tokens",
    required: [uuidCol("id"), uuidCol("user_id"), stringCol("token_type"), stringCol("token_hash"), stringCol("relates_to"), timeCol("created_at"), timeCol("updated_at")],
    parsed: [{
      column: "token_type",
      values: ["confirmation_token", "reauthentication_token", "recovery_token", "email_change_token_new", "email_change_token_current", "phone_change_token"],
      why: "ParseOneTimeTokenType refuses anything else"
    }]
  },
  {
    table: "audit_log_entries",
    required: [
      col("instance_id", "uuid.UUID: the audit log page fails on a NULL"),
      uuidCol("id"),
      timeCol("created_at"),
      stringCol("ip_address")
    ],
    parsed: []
  },
  {
    table: "webauthn_credentials",
    required: [
      uuidCol("id"),
      uuidCol("user_id"),
      col("credential_id", "[]byte: NULL would be an empty credential that never matches"),
      col("public_key", "[]byte"),
      stringCol("attestation_type"),
      col("sign_count", "uint32"),
      col("backup_eligible", "bool"),
      col("backed_up", "bool"),
      stringCol("friendly_name"),
      timeCol("created_at"),
      timeCol("updated_at")
    ],
    parsed: []
  },
  {
    table: "webauthn_challenges",
    required: [uuidCol("id"), stringCol("challenge_type"), timeCol("created_at"), timeCol("expires_at")],
    parsed: [{ column: "challenge_type", values: ["signup", "registration", "authentication"], why: "GoTrue's challenge kinds" }]
  },
  {
    table: "oauth_clients",
    required: [
      uuidCol("id"),
      stringCol("client_secret_hash", "string: GoTrue writes \"\" for a public client, and NULL fails every client load"),
      stringCol("registration_type"),
      stringCol("client_type"),
      stringCol("token_endpoint_auth_method"),
      stringCol("redirect_uris"),
      stringCol("grant_types"),
      timeCol("created_at"),
      timeCol("updated_at")
    ],
    parsed: []
  },
  {
    table: "oauth_authorizations",
    required: [
      uuidCol("id"),
      stringCol("authorization_id"),
      uuidCol("client_id"),
      stringCol("redirect_uri"),
      stringCol("scope"),
      timeCol("created_at"),
      timeCol("expires_at")
    ],
    parsed: [{ column: "code_challenge_method", values: ["s256", "plain"], why: "GoTrue's PKCE methods, lower case" }]
  },
  {
    table: "oauth_consents",
    required: [uuidCol("id"), uuidCol("user_id"), uuidCol("client_id"), stringCol("scopes"), timeCol("granted_at")],
    parsed: []
  },
  // models/sso.go: the SSO provider with its SAML connection and domains, loaded whole for every SSO request.
  {
    table: "sso_providers",
    required: [uuidCol("id"), timeCol("created_at"), timeCol("updated_at")],
    parsed: []
  },
  {
    table: "sso_domains",
    required: [uuidCol("id"), uuidCol("sso_provider_id"), stringCol("domain"), timeCol("created_at"), timeCol("updated_at")],
    parsed: []
  },
  {
    table: "saml_providers",
    required: [
      uuidCol("id"),
      uuidCol("sso_provider_id"),
      stringCol("entity_id"),
      stringCol("metadata_xml"),
      col("attribute_mapping", "SAMLAttributeMapping: its Scan refuses NULL (GoTrue writes {} for no keys)"),
      timeCol("created_at"),
      timeCol("updated_at")
    ],
    parsed: []
  },
  {
    table: "saml_relay_states",
    required: [uuidCol("id"), uuidCol("sso_provider_id"), stringCol("request_id"), stringCol("redirect_to"), timeCol("created_at"), timeCol("updated_at")],
    parsed: []
  }
]

/** One thing the doctor counted: rows GoTrue cannot read, or a note that does not stop GoTrue reading. */
export type DoctorFinding =
  | { readonly _tag: "NullInRequired"; readonly table: string; readonly column: string; readonly rows: number; readonly why: string }
  | { readonly _tag: "Unparsable"; readonly table: string; readonly column: string; readonly rows: number; readonly why: string }
  | { readonly _tag: "MissingColumn"; readonly table: string; readonly column: string }
  | { readonly _tag: "MissingTable"; readonly table: string }
  | { readonly _tag: "NoGoTrueHistory" }
  | { readonly _tag: "SessionsNotRefreshable"; readonly sessions: number }
  /** Migration 0024's count table or its triggers (users and audit_log_entries), found broken. */
  | { readonly _tag: "RowCounts"; readonly table: string; readonly problem: RowCountsProblem }

/**
 * `TableMissing`: the triggers remain without their table, so every write to users and audit_log_entries fails, GoTrue's
 * too. `TriggersMissing` (names) and `Drift` (the counted and the real rows): X-Total-Count and the admin list's last
 * pages are wrong, but nothing fails.
 */
export type RowCountsProblem =
  | { readonly _tag: "TableMissing" }
  | { readonly _tag: "TriggersMissing"; readonly triggers: ReadonlyArray<string> }
  | { readonly _tag: "Drift"; readonly counted: number; readonly actual: number }

/** The triggers migration 0024 puts on each counted table (their functions are gatehouse_count_*). */
export const ROW_COUNT_TRIGGERS: Readonly<Record<"users" | "audit_log_entries", ReadonlyArray<string>>> = {
  users: ["gatehouse_count_ins", "gatehouse_count_del", "gatehouse_count_aud", "gatehouse_count_truncate"],
  audit_log_entries: ["gatehouse_count_ins", "gatehouse_count_del", "gatehouse_count_truncate"]
}

/**
 * What the doctor says of the count table: nothing on a database 0024 never ran on (no table, no trigger), else
 * the table's absence, each table's missing triggers, and each table whose counted rows differ from its rows.
 */
export const rowCountFindings = (state: {
  readonly tablePresent: boolean
  /** The enabled triggers named gatehouse_count_* found on the counted tables. */
  readonly triggers: ReadonlyArray<{ readonly table: "users" | "audit_log_entries"; readonly name: string }>
  /** Per table, the sum of its counts and its rows (read only when the table and all triggers are there). */
  readonly sums: ReadonlyArray<{ readonly table: "users" | "audit_log_entries"; readonly counted: number; readonly actual: number }>
}): ReadonlyArray<DoctorFinding> => {
  if (!state.tablePresent) {
    return state.triggers.length === 0 ? [] : [{ _tag: "RowCounts", table: "gatehouse_row_counts", problem: { _tag: "TableMissing" } }]
  }
  const missing = (["users", "audit_log_entries"] as const).flatMap((table): ReadonlyArray<DoctorFinding> => {
    const absent = ROW_COUNT_TRIGGERS[table].filter((name) => !state.triggers.some((t) => t.table === table && t.name === name))
    return absent.length === 0 ? [] : [{ _tag: "RowCounts", table, problem: { _tag: "TriggersMissing", triggers: absent } }]
  })
  const drift = state.sums.filter((sum) => sum.counted !== sum.actual)
    .map((sum): DoctorFinding => ({ _tag: "RowCounts", table: sum.table, problem: { _tag: "Drift", counted: sum.counted, actual: sum.actual } }))
  return [...missing, ...drift]
}

/**
 * Only what stops GoTrue reading rows fails the check. Sessions GoTrue cannot refresh are a note: GoTrue reads them
 * (and their access tokens verify until they expire), it only refuses their refresh tokens until `export-sessions`
 * writes the sessions' keys where GoTrue reads them.
 */
export const isBlocking = (finding: DoctorFinding): boolean => {
  switch (finding._tag) {
    case "SessionsNotRefreshable":
      return false
    case "RowCounts":
      return finding.problem._tag === "TableMissing"
    case "MissingColumn":
    case "MissingTable":
    case "NoGoTrueHistory":
      return true
    default:
      return finding.rows > 0
  }
}

/** One line per finding, for a person; no value from a row is ever printed, only counts. */
export const describeFinding = (finding: DoctorFinding): string => {
  switch (finding._tag) {
    case "NullInRequired":
      return `FAIL ${finding.table}.${finding.column}: ${finding.rows} row(s) hold NULL (${finding.why})`
    case "Unparsable":
      return `FAIL ${finding.table}.${finding.column}: ${finding.rows} row(s) hold a value GoTrue cannot parse (${finding.why})`
    case "MissingColumn":
      return `FAIL ${finding.table}.${finding.column}: the column does not exist, and GoTrue selects it`
    case "MissingTable":
      return `FAIL ${finding.table}: the table does not exist`
    case "NoGoTrueHistory":
      return "FAIL schema_migrations: GoTrue never ran on this database (no migration history): GoTrue would run all its " +
        "migrations over Gatehouse's tables; the way back is for databases GoTrue made"
    case "SessionsNotRefreshable":
      return `NOTE sessions: ${finding.sessions} live session(s) hold a Gatehouse refresh token GoTrue cannot exchange ` +
        `until \`export-sessions\` runs (with Gatehouse stopped); their access tokens verify until they expire`
    case "RowCounts":
      switch (finding.problem._tag) {
        case "TableMissing":
          return `FAIL ${finding.table}: the table is gone but its triggers remain, so every write to users and audit_log_entries ` +
            `fails (GoTrue's too): run Gatehouse's migrations again, or drop the functions gatehouse_count_* with CASCADE`
        case "TriggersMissing":
          return `NOTE ${finding.table}: trigger(s) ${finding.problem.triggers.join(", ")} are missing or disabled: ` +
            `X-Total-Count and the admin list's last pages drift from the rows`
        case "Drift":
          return `NOTE ${finding.table}: the count table says ${finding.problem.counted} row(s), the table holds ` +
            `${finding.problem.actual} (written with triggers off?): X-Total-Count and the last pages are off by the difference`
      }
  }
}

/** The summary line and the exit code: 0 when GoTrue can read every row, 1 otherwise. */
export const doctorVerdict = (findings: ReadonlyArray<DoctorFinding>): { readonly summary: string; readonly exitCode: 0 | 1 } => {
  const blocking = findings.filter(isBlocking).length
  const notes = findings.filter((f) => (f._tag === "SessionsNotRefreshable" && f.sessions > 0) || (f._tag === "RowCounts" && !isBlocking(f))).length
  return blocking === 0
    ? { summary: `doctor: GoTrue v2.196 can read every row (${notes} note(s))`, exitCode: 0 }
    : { summary: `doctor: ${blocking} problem(s) GoTrue v2.196 cannot read past (${notes} note(s))`, exitCode: 1 }
}

/**
 * GoTrue's legacy refresh token (12 characters [a-z0-9], stored as it is), as a PostgreSQL pattern. GoTrue v2.196
 * refuses, before any lookup, a refresh token that is neither this nor its signed form (version byte 0, session id,
 * counter, HMAC, checksum, 38 bytes or more). Gatehouse's tokens are of the signed form, and GoTrue exchanges them
 * once the session row holds their key (export-sessions); a session with neither is one GoTrue cannot refresh.
 */
export const GOTRUE_LEGACY_TOKEN_PATTERN = "^[a-z0-9]{12}$"
