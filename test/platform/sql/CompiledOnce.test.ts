/**
 * compiledOnce: a statement compiled once with stand-ins gives, for any values, exactly the text and parameters the
 * template compiles to when built with those values; a template that uses a value any other way is refused.
 */
import { PgClient } from "@effect/sql-pg"
import * as Statement from "@effect/sql/Statement"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { compiledOnce } from "../../../src/platform/sql/CompiledOnce.js"

// A statement constructor with PostgreSQL's compiler and no connection: these statements are compiled, never run.
const sql = Statement.make(Effect.die("no database here"), PgClient.makeCompiler(), [], undefined)

interface Values {
  readonly id: unknown
  readonly now: unknown
  readonly a: unknown
  readonly b: unknown
}

// Identifiers, a fragment, a constant, a value used twice and values inside a list of rows: the shapes the hot
// statements use.
const template = (v: Values) => {
  const rows = [sql`(${v.a}::text, ${v.now}::timestamptz)`, sql`(${v.b}::text, ${v.now}::timestamptz)`]
  const fragment = sql`x.updated_at < ${v.now}`
  return sql<{ n: number }>`SELECT count(*) FROM ${sql("auth.things")} x, (VALUES ${sql.csv(rows)}) AS v (t, at)
    WHERE x.id = ${v.id} AND ${fragment} AND x.kind = ${"constant"} AND x.pattern ~ ${"^[0-9]+$"}`
}

const value = FastCheck.oneof(
  FastCheck.string(),
  FastCheck.fullUnicodeString(),
  FastCheck.integer(),
  FastCheck.double({ noNaN: true }),
  FastCheck.boolean(),
  FastCheck.constant(null),
  FastCheck.date({ noInvalidDate: true })
)

describe("compiledOnce", () => {
  const compiled = compiledOnce(sql, template)

  it.prop("compiles to the template's own text and parameters for any values", {
    id: value,
    now: value,
    a: value,
    b: value
  }, (values) => {
    expect(compiled(values).compile()).toStrictEqual(template(values).compile())
  })

  it("keeps the template's constants and puts each value in every place it goes", () => {
    const now = new Date("2030-01-01T00:00:00Z")
    const [text, params] = compiled({ id: "u1", now, a: "first", b: "second" }).compile()
    expect(text).toContain(`FROM "auth"."things" x`)
    expect(params).toStrictEqual(["first", now, "second", now, "u1", now, "constant", "^[0-9]+$"])
  })

  it("refuses a template that uses a value other than as a parameter as it is", () => {
    expect(() => compiledOnce(sql, (v: { readonly payload: object }) => sql`SELECT ${JSON.stringify(v.payload)}::json`))
      .toThrow(/"payload" is read but is not a parameter/)
    expect(() => compiledOnce(sql, (v: { readonly table: string }) => sql`SELECT * FROM ${sql(v.table)}`))
      .toThrow(/"table" is read but is not a parameter/)
    expect(() => compiledOnce(sql, (v: { readonly ids: ReadonlyArray<string> }) => sql`SELECT 1 WHERE ${sql.in(v.ids)}`))
      .toThrow()
  })
})
