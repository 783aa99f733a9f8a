/** Metadata updates merge one level deep and a null value removes that key (GoTrue's rule, for users and admins). */
export const mergeMetadata = (
  current: Record<string, unknown>,
  update: Record<string, unknown>
): Record<string, unknown> => {
  const merged: Record<string, unknown> = { ...current }
  for (const [key, value] of Object.entries(update)) {
    if (value === null) delete merged[key]
    else merged[key] = value
  }
  return merged
}
