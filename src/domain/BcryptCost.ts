/** The cost a bcrypt hash was made at (`$2a$13$…` → 13); undefined for anything that is not a bcrypt hash. */
export const bcryptCost = (hash: string): number | undefined => {
  const match = /^\$2[abxy]\$(\d{2})\$/.exec(hash)
  return match === null ? undefined : Number(match[1])
}

/**
 * Whether a bcrypt hash is of another cost than `cost`. GoTrue rehashes at its default cost, after a sign-in, a hash
 * above that cost or at the minimum (4); Gatehouse keeps every hash at its configured cost, so a weak cost brought
 * from elsewhere (5 to 9 too) is raised and a needlessly slow one lowered. A hash that is not bcrypt's is left alone.
 */
export const needsRehash = (hash: string, cost: number): boolean => {
  const found = bcryptCost(hash)
  return found !== undefined && found !== cost
}
