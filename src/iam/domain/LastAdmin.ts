/**
 * Whether taking `removed` away from the holders of the admin role leaves it without any. A role nobody holds has
 * nothing left to protect.
 */
export const leavesNoAdmin = (holders: ReadonlyArray<number>, removed: ReadonlyArray<number>): boolean =>
  holders.length > 0 && holders.every((holder) => removed.includes(holder))
