import { describe, expect, it } from "@effect/vitest"
import { codeRedirect, errorRedirect, oauthErrorOf, sessionFragment } from "../../../src/auth/external/CallbackRedirect.js"
import { AuthError } from "../../../src/auth/domain/AuthError.js"

const session = { access_token: "at", refresh_token: "rt", expires_in: 3600, expires_at: 1900000000, token_type: "bearer" }

describe("callback redirects", () => {
  it("the implicit flow's session and provider tokens go in the fragment, sorted, marked with sb, replacing any fragment", () => {
    expect(sessionFragment("http://localhost:3000/app?x=1#old", session, "github", { accessToken: "gho", refreshToken: null })).toBe(
      "http://localhost:3000/app?x=1#access_token=at&expires_at=1900000000&expires_in=3600&provider=github&provider_refresh_token=" +
        "&provider_token=gho&refresh_token=rt&token_type=bearer&sb="
    )
  })

  it("an error goes in the fragment, and for a PKCE flow in the query too; a provider's own error passes as it came", () => {
    const failure = { _tag: "Auth" as const, error: AuthError.of(400, "bad_oauth_state", "OAuth callback with invalid state") }
    expect(errorRedirect("http://localhost:3000/", failure, false)).toBe(
      "http://localhost:3000/#error=invalid_request&error_code=bad_oauth_state&error_description=OAuth+callback+with+invalid+state&sb="
    )
    const pkce = new URL(errorRedirect("http://localhost:3000/", failure, true))
    expect(pkce.searchParams.get("error_code")).toBe("bad_oauth_state")
    expect(new URLSearchParams(pkce.hash.slice(1)).get("error_code")).toBe("bad_oauth_state")
    expect(errorRedirect("http://localhost:3000/", { _tag: "Provider", error: "access_denied", description: "no" }, false)).toBe(
      "http://localhost:3000/#error=access_denied&error_description=no&sb="
    )
  })

  it("GoTrue's oauthErrorMap, with other statuses as client or server errors", () => {
    expect([400, 401, 403, 422, 500, 502, 503].map(oauthErrorOf)).toEqual([
      "invalid_request", "unauthorized_client", "access_denied", "invalid_request", "server_error", "server_error", "temporarily_unavailable"
    ])
  })

  it("the PKCE flow's code goes in the query", () => {
    expect(codeRedirect("http://localhost:3000/done?a=b#x", "c0de")).toBe("http://localhost:3000/done?a=b&code=c0de")
  })
})
