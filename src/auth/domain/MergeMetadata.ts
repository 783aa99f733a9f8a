/** `data` is merged into user_metadata one level deep; a null value removes that key (GoTrue's rule). */
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
