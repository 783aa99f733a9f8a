/**
 * Whose tables a product's schema holds, judged before Gatehouse migrates it. Gatehouse creates its tables with
 * `IF NOT EXISTS` so that it can adopt a database another program made (GoTrue's `auth` schema); the same leniency
 * over a schema nobody recognises would mix Gatehouse's tables into someone else's, or take a same-named table of
 * another program for its own. So a schema is migrated only when none of the tables Gatehouse would make is there,
 * when it is Gatehouse's own, or when it carries the migration record of a program Gatehouse knows how to adopt.
 */
export type SchemaOwner =
  /** None of the tables Gatehouse would make is there (other tables may be). */
  | { readonly _tag: "Empty" }
  | { readonly _tag: "Gatehouse" }
  /** Another program's schema that Gatehouse adopts, known by its migration record (`marker`). */
  | { readonly _tag: "Adoptable"; readonly marker: string }
  | { readonly _tag: "Unknown"; readonly tables: ReadonlyArray<string> }
  /**
   * Gatehouse's tables under the prefix `auth_`, made while DB_NAMESPACE=auth was read as a prefix; it now means
   * GoTrue's schema itself (no prefix), so those tables would be left behind.
   */
  | { readonly _tag: "FormerAuthPrefix" }

/**
 * `tables`: the tables and views in the schema. `ownTables`: the tables Gatehouse's migrations create there, unprefixed
 * (tablesCreatedBy). Only those, under Gatehouse's prefix, can collide: other tables, and other deployments' prefixed
 * tables beside them, are none of Gatehouse's business. Another program's record adopts only without a prefix.
 */
export const schemaOwner = (
  tables: ReadonlyArray<string>,
  prefix: string,
  ownTables: ReadonlyArray<string>,
  adoptableMarkers: ReadonlyArray<string>
): SchemaOwner => {
  if (tables.includes(`${prefix}gatehouse_migrations`)) return { _tag: "Gatehouse" }
  if (prefix === "" && tables.includes("auth_gatehouse_migrations")) return { _tag: "FormerAuthPrefix" }
  const colliding = ownTables.map((table) => `${prefix}${table}`).filter((table) => tables.includes(table))
  if (colliding.length === 0) return { _tag: "Empty" }
  const marker = prefix === "" ? adoptableMarkers.find((candidate) => tables.includes(candidate)) : undefined
  return marker === undefined ? { _tag: "Unknown", tables: [...new Set(colliding)].sort() } : { _tag: "Adoptable", marker }
}

const CREATED = /CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\{\{schema\}\}\.\{\{prefix\}\}([a-z0-9_]+)/gi

/** The tables a set of migrations creates, unprefixed, read from their SQL. */
export const tablesCreatedBy = (sqlTexts: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(sqlTexts.flatMap((text) => [...text.matchAll(CREATED)].map((match) => match[1]!.toLowerCase())))].sort()

/** The refusal an operator reads: what is there, and the two ways on. */
export const unknownSchemaMessage = (schema: string, tables: ReadonlyArray<string>, adoptableMarkers: ReadonlyArray<string>): string => {
  const shown = tables.slice(0, 8).join(", ") + (tables.length > 8 ? `, … (${tables.length} in all)` : "")
  const known = adoptableMarkers.length === 0
    ? "Gatehouse's own migration record"
    : `Gatehouse's own migration record or ${adoptableMarkers.map((marker) => `${schema}.${marker}`).join(", ")}`
  return `schema ${schema} already holds tables named as Gatehouse's (${shown}) that Gatehouse did not make, and no migration record it knows ` +
    `(${known}): Gatehouse will not migrate over an unknown schema. Point DATABASE_URL at the intended database, ` +
    `or set DB_NAMESPACE to keep Gatehouse's tables apart from these.`
}

/** The refusal for Gatehouse tables made under the prefix `auth_`: what happened, and the way on. */
export const formerAuthPrefixMessage = (schema: string): string =>
  `schema ${schema} holds Gatehouse's tables under the prefix auth_ (${schema}.auth_users, …), made while DB_NAMESPACE=auth ` +
  `was read as a table prefix. It now means GoTrue's own tables, with no prefix, so those would be left behind: rename ` +
  `them without the prefix (ALTER TABLE ${schema}.auth_users RENAME TO users, and so on for every auth_ table), or ` +
  `point DATABASE_URL at another database.`
