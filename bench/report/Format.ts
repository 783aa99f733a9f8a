/** Figures with about three significant digits; "–" where there is nothing to show. */
export const formatNumber = (value: number): string => {
  if (!Number.isFinite(value)) return "–"
  const abs = Math.abs(value)
  return value.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3)
}

/** Ours over minimal, as "×1.23". */
export const formatRatio = (value: number): string => (Number.isFinite(value) ? `×${value.toFixed(2)}` : "–")
