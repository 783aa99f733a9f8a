import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthError } from "./AuthError.js"
import { emailProblemMessage, parseEmail } from "./Email.js"
import { invalidPhoneMessage, normalizePhone } from "./Phone.js"

/** The verification types GoTrue knows (`internal/mailer/mailer.go`); sms and phone_change are POST-only. */
export const VERIFY_TYPES = ["signup", "invite", "recovery", "magiclink", "email_change", "email", "sms", "phone_change"] as const
export type VerifyType = (typeof VERIFY_TYPES)[number]

export const isVerifyType = (type: string): type is VerifyType => (VERIFY_TYPES as ReadonlyArray<string>).includes(type)

export type Recipient =
  | { readonly _tag: "Email"; readonly email: string }
  | { readonly _tag: "Phone"; readonly phone: string }

/** What a valid POST /verify body asks: a code sent to an address, or the hash a link carries. */
export type VerifyRequest =
  | { readonly _tag: "Code"; readonly type: VerifyType; readonly token: string; readonly recipient: Recipient }
  | { readonly _tag: "Hash"; readonly type: VerifyType; readonly tokenHash: string }

export interface VerifyBody {
  readonly type?: string | null | undefined
  readonly token?: string | null | undefined
  readonly token_hash?: string | null | undefined
  readonly email?: string | null | undefined
  readonly phone?: string | null | undefined
  readonly redirect_to?: string | null | undefined
}

export const unsupportedType = (): AuthError => AuthError.validation("Unsupported verification type")

/**
 * POST /verify's body rules in GoTrue's order (reference §2.9): a type; exactly one of token and token_hash; a
 * token with exactly one of email and phone (each validated as sign-up validates it); a token_hash alone. The type
 * is judged last, as GoTrue's handler does after its parameter checks.
 */
export const validateVerifyBody = (body: VerifyBody): Either.Either<VerifyRequest, AuthError> => {
  const type = body.type ?? ""
  const token = body.token ?? ""
  const tokenHash = body.token_hash ?? ""
  const email = body.email ?? ""
  const phone = body.phone ?? ""
  if (type === "") return Either.left(AuthError.validation("Verify requires a verification type"))
  if ((token === "") === (tokenHash === "")) {
    return Either.left(AuthError.validation("Verify requires either a token or a token hash"))
  }
  let request: VerifyRequest | undefined
  if (token !== "") {
    if ((email === "") === (phone === "")) {
      return Either.left(AuthError.validation("Only an email address or phone number should be provided on verify"))
    }
    if (email !== "") {
      const parsed = parseEmail(email)
      if (Either.isLeft(parsed)) return Either.left(AuthError.validation(emailProblemMessage[parsed.left]))
      request = { _tag: "Code", type: type as VerifyType, token, recipient: { _tag: "Email", email: parsed.right } }
    } else {
      const parsed = normalizePhone(phone)
      if (Option.isNone(parsed)) return Either.left(AuthError.validation(invalidPhoneMessage))
      request = { _tag: "Code", type: type as VerifyType, token, recipient: { _tag: "Phone", phone: parsed.value } }
    }
  } else {
    if (email !== "" || phone !== "" || (body.redirect_to ?? "") !== "") {
      return Either.left(AuthError.validation("Only the token_hash and type should be provided"))
    }
    request = { _tag: "Hash", type: type as VerifyType, tokenHash }
  }
  return isVerifyType(type) ? Either.right(request) : Either.left(unsupportedType())
}

/** GoTrue's two wordings of one answer: a code that does not match, or a link that does not. */
export const otpExpired = (path: VerifyRequest["_tag"]): AuthError =>
  AuthError.of(403, "otp_expired", path === "Code" ? "Token has expired or is invalid" : "Email link is invalid or has expired")

/** A token is good for `validity` after it was sent; one never sent (no timestamp) is not good at all. */
export const isOtpExpired = (sentAt: Date | null, validity: Duration.Duration, now: Date): boolean =>
  sentAt === null || now.getTime() > sentAt.getTime() + Duration.toMillis(validity)

/** Wrong codes a token survives: the fifth failure invalidates it, so a 6-digit code cannot be guessed. */
export const MAX_OTP_FAILURES = 5

/** Failures counted against one stored token hash; a new token (another hash) starts from zero. */
export interface OtpFailures {
  readonly tokenHash: string
  readonly failures: number
}

export const failuresAfterMiss = (previous: OtpFailures | undefined, tokenHash: string): number =>
  previous !== undefined && previous.tokenHash === tokenHash ? previous.failures + 1 : 1

export const isExhausted = (failures: number): boolean => failures >= MAX_OTP_FAILURES

/** GoTrue's way of marking its own redirects: an empty `sb` parameter after the rest, which is sorted by key. */
const fragment = (url: string, values: Record<string, string>): string => {
  const sorted = Object.keys(values).sort().map((key): [string, string] => [key, values[key]!])
  const base = url.includes("#") ? url.slice(0, url.indexOf("#")) : url
  return `${base}#${new URLSearchParams(sorted).toString()}&sb=`
}

export interface FragmentSession {
  readonly access_token: string
  readonly expires_at: number
  readonly expires_in: number
  readonly refresh_token: string
  readonly token_type: string
}

/** GET /verify's success: the session in the fragment (the implicit flow), for the page at `url` to pick up. */
export const sessionRedirect = (url: string, session: FragmentSession, type: string): string =>
  fragment(url, {
    access_token: session.access_token,
    expires_at: String(session.expires_at),
    expires_in: String(session.expires_in),
    refresh_token: session.refresh_token,
    token_type: session.token_type,
    type
  })

export const messageRedirect = (url: string, message: string): string => fragment(url, { message })

/** The first half of an email change in a PKCE flow: as messageRedirect, and the message in the query too (GoTrue's). */
export const pkceMessageRedirect = (url: string, message: string): string => {
  const target = new URL(url)
  target.hash = ""
  target.searchParams.set("message", message)
  return messageRedirect(target.href, message)
}

/** GET /verify's failure; a client error is `access_denied`, anything else `server_error`. */
export const errorRedirect = (url: string, error: AuthError): string =>
  fragment(url, {
    error: error.status >= 500 ? "server_error" : "access_denied",
    error_code: error.code,
    error_description: error.message
  })

/** GET /verify's success in a PKCE flow: the flow's auth code in the query, for the app to exchange with its verifier. */
export const codeRedirect = (url: string, code: string): string => {
  const target = new URL(url)
  target.hash = ""
  target.searchParams.set("code", code)
  return target.href
}

/** GET /verify's failure in a PKCE flow: as errorRedirect, and the same in the query, where a PKCE app looks. */
export const pkceErrorRedirect = (url: string, error: AuthError): string => {
  const target = new URL(url)
  target.hash = ""
  target.searchParams.set("error", error.status >= 500 ? "server_error" : "access_denied")
  target.searchParams.set("error_code", error.code)
  target.searchParams.set("error_description", error.message)
  return errorRedirect(target.href, error)
}
