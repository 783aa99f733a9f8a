/**
 * The token in an Authorization header.
 * - strict (GoTrue's rule, the auth API): exactly `Bearer <token>`, the scheme in any case, one space, one token;
 *   anything else is no token, so `Bearer a b`, `Basic …` and a bare token are all "not signed in".
 * - lenient (the IAM service, whose gRPC and Connect clients send tokens either way): surrounding and repeated
 *   whitespace is allowed, and a bare token without a scheme counts too.
 */
export const bearerToken = (header: string | undefined, mode: "strict" | "lenient" = "strict"): string | undefined => {
  if (mode === "strict") return STRICT.exec(header ?? "")?.[1]
  const value = header?.trim() ?? ""
  if (value === "") return undefined
  const match = LENIENT.exec(value)
  return match !== null ? match[1] : /\s/.test(value) ? undefined : value
}

const STRICT = /^bearer (\S+)$/i
const LENIENT = /^bearer\s+(\S+)$/i
