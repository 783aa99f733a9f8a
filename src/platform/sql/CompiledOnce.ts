import type * as Statement from "@effect/sql/Statement"

// What stands in for a parameter while the statement is compiled: no value a caller passes starts with NUL.
const MARK = "\u0000compiled-once:"

/**
 * A statement whose text never changes, compiled once: `build` writes it as usual with `values.<name>` wherever a
 * parameter goes, and the result makes the same statement for given values without building and compiling the
 * template again (on the refresh grant that was about 30 KB of garbage a request and a tenth of a millisecond).
 *
 * `build` runs once, with stand-ins: it must put each of `values`' fields into the statement as a value as it is
 * (not inside JSON.stringify, not as a list for sql.csv or sql.in, not as an identifier), and must not branch on
 * them; a field it never uses as a value is refused when the statement is made.
 */
export const compiledOnce = <Values extends object, A extends object>(
  sql: Statement.Constructor,
  build: (values: Values) => Statement.Statement<A>
): (values: Values) => Statement.Statement<A> => {
  const read = new Set<string>()
  const standIns = new Proxy({}, {
    get: (_target, name) => {
      if (typeof name !== "string") return undefined
      read.add(name)
      return MARK + name
    }
  }) as Values
  const [text, compiled] = build(standIns).compile()
  const slots = compiled.map((param) => typeof param === "string" && param.startsWith(MARK) ? param.slice(MARK.length) : undefined)
  for (const name of read) {
    if (!slots.includes(name)) throw new Error(`compiledOnce: "${name}" is read but is not a parameter of the statement as it is`)
  }
  return (values) => {
    const params = compiled.map((param, i) => {
      const slot = slots[i]
      return slot === undefined ? param : (values as Record<string, unknown>)[slot]
    })
    return sql.unsafe<A>(text, params)
  }
}
