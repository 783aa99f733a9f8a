/**
 * How deeply a JSON body may nest. Real payloads (user metadata, IAM messages) stay in single digits; the cap
 * only has to sit far below where recursive code (Schema decoding, error formatting, jsonb) runs out of stack,
 * which a few thousand levels of `[[[…]]]` reach.
 */
export const MAX_JSON_DEPTH = 128

/**
 * Whether `text` opens more than `max` arrays or objects inside one another. One linear pass over the raw
 * text, counting brackets outside string literals, so it is safe to run before JSON.parse on anything: it
 * never recurses and does not care whether the text is valid JSON (the parser decides that afterwards).
 */
export const jsonDepthExceeds = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash escapes the next character, a quote included
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}
