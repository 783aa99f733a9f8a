import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { AuthError } from "../domain/AuthError.js"

/**
 * How a declared error comes about, which decides what a tester may expect of a request the document calls valid:
 * - `invalid`: the request breaks a rule the document states (a missing field, a malformed address), so a request
 *   the document calls valid never gets it;
 * - `refused`: a well-formed request refused for what its data meets (a wrong password, a taken address, a
 *   switched-off provider): GoTrue answers these 400 or 422 where a strict reading of HTTP would say 401 or 409;
 * - `oauth`: GoTrue's OAuthError, `{error, error_description}` in every API version (the id_token grant).
 */
export type AuthErrorKind = "invalid" | "refused" | "oauth"

/** One declaration: the codes an endpoint (or its group, middleware or API) answers with at one status. */
export interface AuthErrorDeclaration {
  readonly status: number
  readonly codes: ReadonlyArray<string>
  readonly kind: AuthErrorKind
  /** Why, when the status is not what a strict reading of HTTP would give. */
  readonly note?: string
}

const DeclarationId: unique symbol = Symbol.for("gatehouse/auth/AuthErrorDeclaration")

/**
 * The error of the auth API as the contract declares it: at runtime every failure is an AuthError, rendered by
 * ErrorEnvelope; the declaration says at which status and with which codes, for the document and for the typed
 * handlers (a declared error's type is AuthError, so a handler may fail with any AuthError).
 */
const declare = (declaration: AuthErrorDeclaration): Schema.Schema<AuthError, any> =>
  AuthError.annotations({ ...HttpApiSchema.annotations({ status: declaration.status }), [DeclarationId]: declaration })

export const AuthErrors = {
  invalid: (status: number, codes: ReadonlyArray<string>, note?: string) =>
    declare({ status, codes, kind: "invalid", ...(note === undefined ? {} : { note }) }),
  refused: (status: number, codes: ReadonlyArray<string>, note?: string) =>
    declare({ status, codes, kind: "refused", ...(note === undefined ? {} : { note }) }),
  oauth: (codes: ReadonlyArray<string>, note?: string) =>
    declare({ status: 400, codes, kind: "oauth", ...(note === undefined ? {} : { note }) }),
  /** An OAuth-style error at another status: RFC 7662's 401 invalid_client for a caller that did not authenticate. */
  oauthAt: (status: number, codes: ReadonlyArray<string>, note?: string) =>
    declare({ status, codes, kind: "oauth", ...(note === undefined ? {} : { note }) }),

  /** The declarations in an error schema's AST (a union of them, as HttpApi merges an endpoint's errors). */
  declaredIn: (ast: SchemaAST.AST): ReadonlyArray<AuthErrorDeclaration> => {
    const found: Array<AuthErrorDeclaration> = []
    const walk = (node: SchemaAST.AST): void => {
      const own = SchemaAST.getAnnotation<AuthErrorDeclaration>(node, DeclarationId)
      if (Option.isSome(own)) found.push(own.value)
      else if (SchemaAST.isUnion(node)) node.types.forEach(walk)
    }
    walk(ast)
    return found
  }
}
