import { createHmac, timingSafeEqual } from "node:crypto"
import * as Option from "effect/Option"
import * as Jwt from "../Jwt.js"

/** The header an operator signs each request it proxies with, in multi-instance mode (GoTrue's name for it). */
export const OPERATOR_SIGNATURE_HEADER = "x-nf-sign"

export type OperatorVerdict = "valid" | "missing" | "invalid"

/**
 * Whether a request came through the operator: its OPERATOR_SIGNATURE_HEADER is a JWT signed with HS256 and
 * OPERATOR_TOKEN, not expired (`exp`) and already valid (`nbf`), as GoTrue's multi-instance mode checked it.
 * Only the signature and the times are read: Gatehouse serves one instance, so GoTrue's per-instance claims
 * (`id`, `site_url`) select nothing here.
 */
export const verifyOperatorSignature = (signature: string | undefined, operatorToken: string, nowSeconds: number): OperatorVerdict => {
  if (signature === undefined || signature.trim() === "") return "missing"
  const decoded = Jwt.decode(signature.trim())
  if (Option.isNone(decoded)) return "invalid"
  const { header, payload, signature: mac, signingInput } = decoded.value
  if (header.alg !== "HS256" || mac.length !== 32) return "invalid"
  if (!timingSafeEqual(createHmac("sha256", operatorToken).update(signingInput).digest(), mac)) return "invalid"
  const exp = payload["exp"]
  const nbf = payload["nbf"]
  if (exp !== undefined && (typeof exp !== "number" || exp <= nowSeconds)) return "invalid"
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > nowSeconds)) return "invalid"
  return "valid"
}
