import { isSignedWith, parseSignedRefreshToken } from "../../src/auth/domain/GoTrueSignedRefreshToken.js"
import { refreshTokenKey, sessionSigningKey } from "../../src/auth/sessions/RefreshTokenCodec.js"

/**
 * Whether a refresh token is one Gatehouse issued under `jwtSecret`: GoTrue's signed form, signed with the key
 * Gatehouse derives for the session it names. GoTrue's own signed tokens have the same shape but another key.
 */
export const isGatehouseRefreshToken = (token: unknown, jwtSecret: string): boolean => {
  if (typeof token !== "string") return false
  const parsed = parseSignedRefreshToken(token)
  return parsed !== undefined && isSignedWith(parsed, sessionSigningKey(refreshTokenKey(jwtSecret), parsed.sessionId))
}
