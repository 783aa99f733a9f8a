import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { AuthError } from "../domain/AuthError.js"
import type { FactorKind, Verdict, VerifyInput, VerifyRequest } from "../factors/FactorKind.js"
import { type ChallengeRow, FactorsRepo } from "../factors/FactorsRepo.js"
import { type GoCredential, goCredentialJson, goCredentialOf, readGoCredential } from "./GoWebAuthnJson.js"
import type { RelyingParty } from "./RelyingParty.js"
import { CHALLENGE_BYTES, mfaLogin, mfaRegistration, sessionChallenge } from "./WebAuthnOptions.js"
import {
  assertionCredentialId,
  assertionUserHandle,
  checkAssertionShape,
  verifyAuthentication,
  verifyRegistration,
  type WebAuthnVerificationFailed
} from "./WebAuthnVerifier.js"
import { traced } from "../../platform/Traced.js"

type Ceremony = "create" | "request"

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What Go's encoding/json calls a JSON value it cannot put into a struct. */
const goKind = (value: unknown): string =>
  Array.isArray(value) ? "array" : typeof value === "boolean" ? "bool" : typeof value === "number" ? "number" : "string"

// Built when a request fails, not before.
const badJson = () => AuthError.of(400, "bad_json", "Could not parse request body as JSON: unexpected end of JSON input")
const invalidResponse = () => AuthError.validation("Invalid credential_response")
/** A verified factor whose stored credential cannot be read: the server's fault, and the factor fails closed. */
const unexpected = () => AuthError.of(500, "unexpected_failure", "Unexpected failure, please check server logs for more information")
/**
 * A response that does not verify. GoTrue answers 500 (its default handler for a registration, "Failed to validate
 * WebAuthn MFA response" for a login), which auth-js takes for a server fault worth retrying. It is the client's
 * answer that failed, so here it is the 422 a wrong TOTP or phone code gets, with GoTrue's login message for both.
 */
const responseFailed = () => AuthError.of(422, "mfa_verification_failed", "Failed to validate WebAuthn MFA response")

const rejected = (error: AuthError) => ({ _tag: "Rejected", error }) as const

/** The verify body's `webauthn` object, already checked by checkVerifyRequest. */
interface Answer {
  readonly type: Ceremony
  readonly credential_response: unknown
}

/**
 * GoTrue's `last_webauthn_challenge_data`: the challenge row as its Challenge model writes it, the ceremony and the
 * credential response. GoTrue keeps go-webauthn's parsed form of the response; Gatehouse keeps the response as the
 * client sent it, which holds the same facts and which nothing reads back (GET /user shows it, as GoTrue's does).
 */
const lastChallengeData = (challenge: ChallengeRow, answer: Answer) => ({
  challenge: {
    challenge_id: challenge.id,
    factor_id: challenge.factor_id,
    created_at: challenge.created_at.toISOString(),
    ip_address: challenge.ip_address,
    web_authn_session_data: typeof challenge.web_authn_session_data === "string"
      ? JSON.parse(challenge.web_authn_session_data)
      : challenge.web_authn_session_data
  },
  type: answer.type,
  credential_response: answer.credential_response
})

/** A refusal of the floor: not a credential response at all (400), or one that does not verify (422). */
const judged = (failed: WebAuthnVerificationFailed): Effect.Effect<Verdict, AuthError> =>
  // Why, for the trace only: the client is told as little as GoTrue tells it.
  Effect.zipRight(
    Effect.annotateCurrentSpan("webauthn.refusal", failed.detail),
    failed.kind === "malformed" ? Effect.fail(invalidResponse()) : Effect.succeed(rejected(responseFailed()))
  )

/**
 * The WebAuthn factor (GoTrue's mfa.go): a security key as a second factor. Its first challenge is a registration,
 * whose verification stores the credential on the factor in go-webauthn's JSON; every later one is a login that any
 * of the user's verified WebAuthn factors may answer, as in GoTrue. The RP is WEBAUTHN_RP_* only (what auth-js sends
 * as rpId and rpOrigins is ignored), and a verified challenge is deleted, so an assertion cannot be answered twice.
 *
 * Beyond GoTrue: the ceremony is the factor's, not the body's. GoTrue runs whichever `type` the body names, so a
 * verified factor's login challenge answered with a new registration (of any authenticator) raised the session, and
 * a registration challenge answered with another factor's assertion verified this one with that factor's
 * credential; here a `type` that is not the factor's ceremony is refused as that ceremony fails. An assertion whose
 * user handle names someone else is refused too (go-webauthn checks it; @simplewebauthn does not).
 */
export class WebAuthnFactor extends Effect.Service<WebAuthnFactor>()("auth/WebAuthnFactor", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const random = yield* SecureRandom
    const repo = yield* FactorsRepo
    const rp: RelyingParty = { id: config.webauthn.rpId, name: config.webauthn.rpDisplayName, origins: config.webauthn.rpOrigins }

    /**
     * The user's verified WebAuthn credentials. One GoTrue could not read is left out: it can neither be excluded nor
     * answer, and its factor still counts as verified, so it fails closed.
     */
    const credentialsOf = (userId: string) =>
      Effect.map(repo.verifiedWebAuthnCredentials(userId), (rows) =>
        rows.flatMap((row): ReadonlyArray<GoCredential> =>
          Either.match(readGoCredential(row.web_authn_credential), { onLeft: () => [], onRight: (credential) => [credential] })))

    /**
     * The body's checks GoTrue makes after the verify switch and before it looks the challenge up; whether the
     * response is a credential response at all is judged after the challenge, in `verify`.
     */
    const checkVerifyRequest = ({ webauthn }: VerifyRequest): Effect.Effect<void, AuthError> => {
      // With the switch off, the switch's refusal (Mfa's) comes first, as in GoTrue.
      if (!config.mfa.webauthn.verify) return Effect.void
      if (webauthn === undefined || webauthn === null) return Effect.fail(AuthError.validation("WebAuthn config required"))
      if (!isRecord(webauthn)) {
        return Effect.fail(AuthError.of(400, "bad_json",
          `Could not parse request body as JSON: json: cannot unmarshal ${goKind(webauthn)} into Go struct field VerifyFactorParams.webauthn of type api.WebAuthnParams`))
      }
      if (webauthn["type"] !== "create" && webauthn["type"] !== "request") {
        return Effect.fail(AuthError.validation("WebAuthn type must be create or request"))
      }
      // Go reads an absent response as nil and a JSON null as the text "null", which then does not parse.
      if (webauthn["credential_response"] === undefined) return Effect.fail(AuthError.validation("credential_response required"))
      return Effect.void
    }

    const verifyCreate = traced("WebAuthnFactor.verifyCreate")(function*(input: VerifyInput, answer: Answer, challenge: string) {
      const registered = yield* verifyRegistration(rp, challenge, answer.credential_response)
      return {
        _tag: "Accepted",
        update: {
          webAuthnCredential: goCredentialJson(goCredentialOf(registered)),
          webAuthnAaguid: registered.aaguidBytes.length === 0 ? null : registered.aaguid,
          lastWebAuthnChallengeData: lastChallengeData(input.challenge, answer)
        }
      } as const
    })

    const verifyRequest = traced("WebAuthnFactor.verifyRequest")(function*(input: VerifyInput, answer: Answer, challenge: string) {
      const response = answer.credential_response
      yield* checkAssertionShape(response)
      const handle = assertionUserHandle(response)
      if (handle !== undefined && handle.toLowerCase() !== input.user.id) return rejected(responseFailed())
      const id = assertionCredentialId(response)
      const credential = id === undefined
        ? undefined
        : (yield* credentialsOf(input.user.id)).find((known) => Buffer.from(known.id).equals(Buffer.from(id)))
      if (credential === undefined) return rejected(responseFailed())
      // GoTrue leaves an MFA credential's sign count as registered, so the stored one is checked and never moved.
      yield* verifyAuthentication(rp, challenge, {
        id: credential.id,
        publicKey: credential.publicKey,
        counter: credential.authenticator.signCount,
        transports: credential.transport
      }, response)
      return { _tag: "Accepted", update: { lastWebAuthnChallengeData: lastChallengeData(input.challenge, answer) } } as const
    })

    const kind: FactorKind = {
      type: "webauthn",
      beforeEnroll: () => Effect.void,
      // The credential comes with the first verified challenge; the enrolment answers only id, type and name.
      enroll: () => Effect.succeed({ secret: null, phone: null, answer: {} }),
      challenge: traced("WebAuthnFactor.challenge")(function*({ body, factor, user }) {
        if (body === null) return yield* badJson()
        const credentials = yield* credentialsOf(user.id)
        const bytes = yield* random.bytes(CHALLENGE_BYTES)
        if (factor.status === "verified") {
          // go-webauthn's BeginLogin refuses a user with no credential; GoTrue passes that to its default handler.
          if (credentials.length === 0) return yield* unexpected()
          const ceremony = mfaLogin({
            rp,
            userId: user.id,
            challenge: bytes,
            allow: credentials.map((credential) => ({ id: credential.id, transports: credential.transport }))
          })
          return {
            otpCode: null,
            webAuthnSessionData: ceremony.session,
            answer: { webauthn: { type: "request", credential_options: ceremony.options } }
          }
        }
        const ceremony = mfaRegistration({
          rp,
          userId: user.id,
          email: user.email,
          challenge: bytes,
          exclude: credentials.map((credential) => credential.id)
        })
        return {
          otpCode: null,
          webAuthnSessionData: ceremony.session,
          answer: { webauthn: { type: "create", credential_options: ceremony.options } }
        }
      }),
      checkVerifyRequest,
      verify: traced("WebAuthnFactor.verify")(function*(input) {
        const answer = input.webauthn as Answer
        const ceremony: Ceremony = input.factor.status === "verified" ? "request" : "create"
        const challenge = sessionChallenge(input.challenge.web_authn_session_data)
        if (answer.type === ceremony && challenge !== undefined) {
          return yield* (ceremony === "create" ? verifyCreate(input, answer, challenge) : verifyRequest(input, answer, challenge)).pipe(
            Effect.catchTag("WebAuthnVerificationFailed", judged)
          )
        }
        // Read as the body's type first, as GoTrue parses it: what is no credential response at all is a bad request.
        const parsed = answer.type === "create"
          ? Effect.asVoid(verifyRegistration(rp, challenge ?? "", answer.credential_response))
          : checkAssertionShape(answer.credential_response)
        return yield* parsed.pipe(Effect.matchEffect({
          onFailure: judged,
          onSuccess: () => Effect.succeed(rejected(responseFailed()))
        }))
      }),
      spentChallenge: "delete",
      // The challenge holds nothing to guess: at the limit the factor refuses every answer until its window ends.
      deleteChallengeAtFailureLimit: false
    }
    return kind
  }),
  dependencies: [FactorsRepo.Default]
}) {}
