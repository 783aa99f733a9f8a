/**
 * The WebAuthn relying party both ceremonies run for, MFA factors and passkeys alike (GoTrue's one
 * `WEBAUTHN_RP_*` block). `id` is the domain credentials are scoped to, `name` is what an authenticator shows,
 * and `origins` are the pages a response may come from: compared exactly, as go-webauthn does, so a port or a
 * scheme that differs is another origin. What a client sends as `rpId`/`rpOrigins` is never used: the RP comes
 * from configuration only.
 */
export interface RelyingParty {
  readonly id: string
  readonly name: string
  readonly origins: ReadonlyArray<string>
}
