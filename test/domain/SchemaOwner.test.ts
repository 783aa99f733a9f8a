import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { formerAuthPrefixMessage, schemaOwner, tablesCreatedBy, unknownSchemaMessage } from "../../src/platform/sql/SchemaOwner.js"
import { readMigrations } from "../../src/platform/sql/Migrator.js"

const GOTRUE = ["schema_migrations"]
const OWN = ["identities", "sessions", "users"]
const name = FastCheck.stringMatching(/^[a-z][a-z0-9_]{0,20}$/)

describe("schemaOwner", () => {
  it("an empty schema, Gatehouse's own, GoTrue's and a stranger's", () => {
    expect(schemaOwner([], "", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
    expect(schemaOwner(["users", "gatehouse_migrations", "schema_migrations"], "", OWN, GOTRUE)).toEqual({ _tag: "Gatehouse" })
    expect(schemaOwner(["users", "schema_migrations", "sessions", "saml_providers"], "", OWN, GOTRUE))
      .toEqual({ _tag: "Adoptable", marker: "schema_migrations" })
    expect(schemaOwner(["users", "accounts"], "", OWN, GOTRUE)).toEqual({ _tag: "Unknown", tables: ["users"] })
    expect(schemaOwner(["users", "sessions"], "", OWN, [])).toEqual({ _tag: "Unknown", tables: ["sessions", "users"] })
  })

  it("tables that are not named as Gatehouse's, and other deployments' prefixed tables, are beside the point", () => {
    expect(schemaOwner(["accounts", "audit"], "", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
    // Another deployment under the prefix acme_eu_ beside a new one under acme_: no collision.
    expect(schemaOwner(["acme_eu_users", "acme_eu_gatehouse_migrations"], "acme_", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
    // An unprefixed deployment beside a prefixed one, both ways.
    expect(schemaOwner(["t_users", "t_gatehouse_migrations"], "", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
    expect(schemaOwner(["users", "gatehouse_migrations"], "t_", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
  })

  it("under a prefix another program's record adopts nothing", () => {
    expect(schemaOwner(["users", "schema_migrations"], "t_", OWN, GOTRUE)).toEqual({ _tag: "Empty" })
    expect(schemaOwner(["t_users", "schema_migrations"], "t_", OWN, GOTRUE)).toEqual({ _tag: "Unknown", tables: ["t_users"] })
    expect(schemaOwner(["t_users", "t_gatehouse_migrations", "other"], "t_", OWN, GOTRUE)).toEqual({ _tag: "Gatehouse" })
  })

  it("Gatehouse's tables under the former auth_ prefix are named as such, with the way on", () => {
    expect(schemaOwner(["auth_users", "auth_gatehouse_migrations", "users", "schema_migrations"], "", OWN, GOTRUE))
      .toEqual({ _tag: "FormerAuthPrefix" })
    expect(formerAuthPrefixMessage("auth")).toContain("ALTER TABLE auth.auth_users RENAME TO users")
  })

  it.prop("Gatehouse's record wins over anything else in the schema", [FastCheck.array(name), FastCheck.constantFrom("", "a_", "tenant_")], ([tables, prefix]) => {
    expect(schemaOwner([...tables, `${prefix}gatehouse_migrations`], prefix, OWN, GOTRUE)).toEqual({ _tag: "Gatehouse" })
  })

  it.prop("without any record, a schema holding tables named as Gatehouse's is refused, naming exactly those", [
    FastCheck.uniqueArray(name).filter((tables) => !tables.some((t) => t === "schema_migrations" || t.endsWith("gatehouse_migrations"))),
    FastCheck.subarray(OWN, { minLength: 1 })
  ], ([others, own]) => {
    const owner = schemaOwner([...others, ...own], "", OWN, GOTRUE)
    expect(owner).toEqual({ _tag: "Unknown", tables: [...own].sort() })
    if (owner._tag !== "Unknown") return
    const message = unknownSchemaMessage("auth", owner.tables, GOTRUE)
    expect(message).toContain(owner.tables[0]!)
    expect(message).toContain("auth.schema_migrations")
  })

  it("names at most eight tables and says how many there are", () => {
    const tables = Array.from({ length: 12 }, (_, i) => `t${String(i).padStart(2, "0")}`)
    const message = unknownSchemaMessage("iam", tables, [])
    expect(message).toContain("t07, … (12 in all)")
    expect(message).not.toContain("t08")
    expect(message).toContain("(Gatehouse's own migration record)")
  })
})

describe("tablesCreatedBy", () => {
  it("reads the tables of the repository's migrations: GoTrue's names in auth, IAM's in iam", () => {
    const of = (product: "auth" | "iam") => tablesCreatedBy(readMigrations().filter((m) => m.product === product).map((m) => m.sql))
    expect(of("auth")).toEqual(expect.arrayContaining(["users", "sessions", "refresh_tokens", "identities", "rate_limits", "one_time_tokens"]))
    expect(of("iam")).toEqual(expect.arrayContaining(["users", "roles", "permissions", "revocations"]))
    expect(of("auth")).not.toContain("gatehouse_migrations")
  })

  it("knows CREATE TABLE in its spellings, and nothing else", () => {
    expect(tablesCreatedBy([
      "CREATE TABLE {{schema}}.{{prefix}}a (id int); create unlogged table if not exists {{schema}}.{{prefix}}b ();",
      "CREATE INDEX {{prefix}}c_idx ON {{schema}}.{{prefix}}c (id); ALTER TABLE {{schema}}.{{prefix}}d ADD COLUMN x int",
      "CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}a ()"
    ])).toEqual(["a", "b"])
  })
})
