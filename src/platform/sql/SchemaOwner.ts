/**
 * Whose tables a product's schema holds, judged before Gatehouse migrates it. Gatehouse creates its tables with
 * `IF NOT EXISTS` so that it can adopt a database another program made (GoTrue's `auth` schema); the same leniency
 * over a schema nobody recognises would mix Gatehouse's tables into someone else's, or take a same-named table of
 * another program for its own. So a schema is migrated only when it is empty (of the tables Gatehouse would own),
 * Gatehouse's own, or carries the migration record of a program Gatehouse knows how to adopt.
 */
export type SchemaOwner =
  | { readonly _tag: "Empty" }
  | { readonly _tag: "Gatehouse" }
  /** Another program's schema that Gatehouse adopts, known by its migration record (`marker`). */
  | { readonly _tag: "Adoptable"; readonly marker: string }
  | { readonly _tag: "Unknown"; readonly tables: ReadonlyArray<string> }

/**
 * `tables`: the tables and views in the schema. With a DB_NAMESPACE prefix Gatehouse's tables are `<prefix>name`
 * and only those can collide, so only those count, and another program's record (unprefixed) adopts nothing.
 */
export const schemaOwner = (
  tables: ReadonlyArray<string>,
  prefix: string,
  adoptableMarkers: ReadonlyArray<string>
): SchemaOwner => {
  const ours = tables.filter((table) => table.startsWith(prefix))
  if (ours.includes(`${prefix}gatehouse_migrations`)) return { _tag: "Gatehouse" }
  if (ours.length === 0) return { _tag: "Empty" }
  const marker = prefix === "" ? adoptableMarkers.find((candidate) => ours.includes(candidate)) : undefined
  return marker === undefined ? { _tag: "Unknown", tables: [...ours].sort() } : { _tag: "Adoptable", marker }
}

/** The refusal an operator reads: what is there, and the two ways on. */
export const unknownSchemaMessage = (schema: string, tables: ReadonlyArray<string>, adoptableMarkers: ReadonlyArray<string>): string => {
  const shown = tables.slice(0, 8).join(", ") + (tables.length > 8 ? `, … (${tables.length} in all)` : "")
  const known = adoptableMarkers.length === 0
    ? "Gatehouse's own migration record"
    : `Gatehouse's own migration record or ${adoptableMarkers.map((marker) => `${schema}.${marker}`).join(", ")}`
  return `schema ${schema} already holds tables Gatehouse did not make (${shown}) and no migration record it knows ` +
    `(${known}): Gatehouse will not migrate over an unknown schema. Point DATABASE_URL at the intended database, ` +
    `or set DB_NAMESPACE to keep Gatehouse's tables apart from these.`
}
