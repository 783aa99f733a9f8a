import { tablePrefix } from "./Migrator.js"

/**
 * A product's tables by their qualified names: `<schema>.<DB_NAMESPACE prefix><table>`, as the migrator creates
 * them from `{{schema}}` and `{{prefix}}`.
 */
export const qualifiedTables = <const Name extends string>(
  schema: string,
  namespace: string,
  names: ReadonlyArray<Name>
): Readonly<Record<Name, string>> =>
  Object.fromEntries(names.map((name) => [name, `${schema}.${tablePrefix(namespace)}${name}`])) as Record<Name, string>
