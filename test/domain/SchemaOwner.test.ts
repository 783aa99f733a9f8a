import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { schemaOwner, unknownSchemaMessage } from "../../src/platform/sql/SchemaOwner.js"

const GOTRUE = ["schema_migrations"]
const name = FastCheck.stringMatching(/^[a-z][a-z0-9_]{0,20}$/)

describe("schemaOwner", () => {
  it("an empty schema, Gatehouse's own, GoTrue's and a stranger's", () => {
    expect(schemaOwner([], "", GOTRUE)).toEqual({ _tag: "Empty" })
    expect(schemaOwner(["users", "gatehouse_migrations", "schema_migrations"], "", GOTRUE)).toEqual({ _tag: "Gatehouse" })
    expect(schemaOwner(["users", "schema_migrations", "sessions"], "", GOTRUE)).toEqual({ _tag: "Adoptable", marker: "schema_migrations" })
    expect(schemaOwner(["users", "accounts"], "", GOTRUE)).toEqual({ _tag: "Unknown", tables: ["accounts", "users"] })
    expect(schemaOwner(["users"], "", [])).toEqual({ _tag: "Unknown", tables: ["users"] })
  })

  it("under a prefix only the prefixed tables count, and another program's record adopts nothing", () => {
    expect(schemaOwner(["users", "schema_migrations"], "t_", GOTRUE)).toEqual({ _tag: "Empty" })
    expect(schemaOwner(["t_users", "schema_migrations"], "t_", GOTRUE)).toEqual({ _tag: "Unknown", tables: ["t_users"] })
    expect(schemaOwner(["t_users", "t_gatehouse_migrations", "other"], "t_", GOTRUE)).toEqual({ _tag: "Gatehouse" })
  })

  it.prop("Gatehouse's record wins over anything else in the schema", [FastCheck.array(name), FastCheck.constantFrom("", "a_", "tenant_")], ([tables, prefix]) => {
    expect(schemaOwner([...tables, `${prefix}gatehouse_migrations`], prefix, GOTRUE)).toEqual({ _tag: "Gatehouse" })
  })

  it.prop("without any record, a schema holding a table of Gatehouse's prefix is refused, naming every such table", [
    FastCheck.uniqueArray(name, { minLength: 1 }).filter((tables) => !tables.includes("gatehouse_migrations") && !tables.includes("schema_migrations"))
  ], ([tables]) => {
    const owner = schemaOwner(tables, "", GOTRUE)
    expect(owner).toEqual({ _tag: "Unknown", tables: [...tables].sort() })
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
