import { InspectFooter } from "paseto"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { IamKeys, v4 } from "./IamKeys.js"
import { traced } from "../../platform/Traced.js"

export type TokenType = "access" | "refresh"

/** The claims Gatehouse puts in its tokens (docs/iam.md lists them). */
export interface TokenClaims {
  readonly sub: string
  readonly jti: string
  readonly typ: TokenType
  /** The refresh family (one sign-in) the token belongs to. */
  readonly fam: string
  readonly exp: Date
  readonly username?: string
  readonly roles?: ReadonlyArray<string>
}

/** Why a token was not accepted; ValidateToken reports it as `reason`. */
export type TokenRejection = "malformed" | "invalid_signature" | "unknown_key" | "expired" | "revoked" | "wrong_type"

const SHAPE = /^v4\.public\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** A token is a few hundred characters; anything far larger is not ours and is not worth a signature check. */
const MAX_TOKEN_LENGTH = 4096

const kidOf = (token: string): string | undefined => {
  try {
    const footer = JSON.parse(new TextDecoder().decode(InspectFooter(token))) as { kid?: unknown }
    return typeof footer.kid === "string" ? footer.kid : undefined
  } catch {
    return undefined
  }
}

const toClaims = (claims: Record<string, unknown>): TokenClaims | undefined => {
  const { exp, fam, jti, roles, sub, typ, username } = claims
  if (typeof sub !== "string" || !/^[1-9]\d{0,9}$/.test(sub)) return undefined
  if (typeof jti !== "string" || !UUID.test(jti) || typeof fam !== "string" || !UUID.test(fam)) return undefined
  if ((typ !== "access" && typ !== "refresh") || typeof exp !== "string") return undefined
  const rolesOk = roles === undefined || (Array.isArray(roles) && roles.every((r) => typeof r === "string"))
  if (!rolesOk || (username !== undefined && typeof username !== "string")) return undefined
  return {
    sub,
    jti,
    typ,
    fam,
    exp: new Date(exp),
    ...(typeof username === "string" ? { username } : {}),
    ...(Array.isArray(roles) ? { roles: roles as ReadonlyArray<string> } : {})
  }
}

/** Signs and verifies PASETO v4.public tokens with the configured keys; time comes from Effect's Clock. */
export class PasetoTokens extends Context.Tag("iam/PasetoTokens")<PasetoTokens, {
  /** `issuedAt` (default: now) is the `iat` claim: the same claims signed with the same `issuedAt` give the same token. */
  readonly sign: (claims: TokenClaims, issuedAt?: Date) => Effect.Effect<string>
  /** Signature, issuer, expiry and claim shape; not revocation, which needs the database's answer. */
  readonly verify: (token: string) => Effect.Effect<Either.Either<TokenClaims, TokenRejection>>
}>() {
  static readonly layer: Layer.Layer<PasetoTokens, never, IamKeys | IamConfig> = Layer.effect(
    PasetoTokens,
    Effect.gen(function*() {
      const keys = yield* IamKeys
      const iam = yield* IamConfig
      const footer = new TextEncoder().encode(JSON.stringify({ kid: keys.signing.kid }))

      const sign = traced("PasetoTokens.sign")(function*(claims: TokenClaims, issuedAt?: Date) {
        const now = issuedAt ?? new Date(yield* Clock.currentTimeMillis)
        const { exp, ...rest } = claims
        return yield* Effect.promise(() =>
          v4.Sign(keys.signing.key, { ...rest, iss: iam.issuer, exp: exp.toISOString() }, { footer, now })
        )
      })

      const verify = traced("PasetoTokens.verify")(function*(token: string) {
        if (token.length > MAX_TOKEN_LENGTH || !SHAPE.test(token)) return Either.left<TokenRejection>("malformed")
        const kid = kidOf(token)
        const key = kid === undefined ? undefined : keys.verifying.get(kid)
        if (key === undefined) return Either.left<TokenRejection>(kid === undefined ? "malformed" : "unknown_key")
        const now = new Date(yield* Clock.currentTimeMillis)
        const result = yield* Effect.promise(() =>
          v4.Verify(key, token, { issuer: iam.issuer, now, requiredClaims: ["sub", "jti", "exp"] }).then(
            (verified) => Either.right(verified.claims as Record<string, unknown>),
            (error: { code?: string; claim?: string }): Either.Either<never, TokenRejection> =>
              Either.left(
                error.code === "ERR_PASETO_CLAIM_VALIDATION"
                  ? error.claim === "exp" ? "expired" : "malformed"
                  : error.code === "ERR_PASETO_INVALID_TOKEN"
                  ? "invalid_signature"
                  : "malformed"
              )
          )
        )
        return Either.flatMap(result, (claims) => Either.fromNullable(toClaims(claims), (): TokenRejection => "malformed"))
      })

      return { sign, verify }
    })
  )
}
