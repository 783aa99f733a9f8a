/**
 * Splits PASSWORD_REQUIRED_CHARACTERS into its character sets: sets are separated by `:`, and `\:` stands for
 * a literal colon inside a set (GoTrue's format). Empty sets are dropped, since they could never be satisfied
 * meaningfully.
 */
export const parseRequiredCharacters = (raw: string): ReadonlyArray<string> => {
  const sets: Array<string> = []
  let current = ""
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!
    if (ch === "\\" && raw[i + 1] === ":") {
      current += ":"
      i++
    } else if (ch === ":") {
      sets.push(current)
      current = ""
    } else {
      current += ch
    }
  }
  sets.push(current)
  return sets.filter((set) => set !== "")
}
