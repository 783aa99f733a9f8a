import { createHmac, timingSafeEqual } from "node:crypto"

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url")

/** A JWT signed with HMAC-SHA256, header as GoTrue's. */
export const signHs256 = (secret: string, claims: object): string => {
  const input = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`
}

/** The claims of an HS256 JWT with a good signature that has not expired; undefined otherwise. */
export const verifyHs256 = (secret: string, token: string, nowSeconds: number): Record<string, any> | undefined => {
  const parts = token.split(".")
  if (parts.length !== 3) return undefined
  const [header, payload, signature] = parts as [string, string, string]
  const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest()
  const given = Buffer.from(signature, "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  try {
    if ((JSON.parse(Buffer.from(header, "base64url").toString("utf8")) as { alg?: unknown }).alg !== "HS256") return undefined
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, any>
    return typeof claims.exp === "number" && claims.exp > nowSeconds ? claims : undefined
  } catch {
    return undefined
  }
}
