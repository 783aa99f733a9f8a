/**
 * Which rows of an ordered index make page `offset / perPage` of a list newest first, read from whichever end of
 * the index is nearer. An OFFSET costs the rows it skips, so the last pages of a million-row list read backwards
 * (oldest first) cost what the first pages cost forwards; only the middle pages cost more, up to total / 2.
 * `total` must be exact (the count table's), or the backward slices would be off by the difference.
 */
export interface PageSlice {
  /** Read newest first (forwards in the list's order) or oldest first (backwards). */
  readonly newestFirst: boolean
  readonly limit: number
  readonly offset: number
}

/** The slice of the `offset`-th row onwards (at most `perPage` rows); undefined when the page is past the end. */
export const pageSlice = (offset: number, perPage: number, total: number): PageSlice | undefined => {
  if (offset >= total) return undefined
  if (offset <= total / 2) return { newestFirst: true, limit: perPage, offset }
  const end = Math.min(offset + perPage, total)
  return { newestFirst: false, limit: end - offset, offset: total - end }
}
