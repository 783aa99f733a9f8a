import type { CaptchaProvider } from "../../src/platform/Captcha.js"
import { formFields, type RecordedRequest, type StubAnswer } from "./LocalServers.js"

export interface FakeCaptchaSettings {
  readonly provider: CaptchaProvider
  /** The site's secret: any other gets the provider's invalid-input-secret. */
  readonly secret: string
  /** The one token that passes, as a solved widget's would. */
  readonly passing: string
  /** A token the provider never answers for. */
  readonly hanging?: string
}

/**
 * hCaptcha's or Turnstile's siteverify, for startHttpStub: it reads the form body as the real one does (secret,
 * response) and answers with that provider's JSON, 200 for a refusal too. Only a form POST is understood.
 */
export const fakeCaptchaProvider = (settings: FakeCaptchaSettings) => (request: RecordedRequest): StubAnswer => {
  const form = new Map(formFields(request.body))
  const refuse = (code: string): StubAnswer =>
    settings.provider === "hcaptcha"
      ? { status: 200, json: { success: false, "error-codes": [code] } }
      : { status: 200, json: { success: false, "error-codes": [code], messages: [] } }
  if (request.method !== "POST" || request.headers["content-type"] !== "application/x-www-form-urlencoded") return refuse("bad-request")
  const secret = form.get("secret")
  const response = form.get("response")
  if (secret === undefined) return refuse("missing-input-secret")
  if (secret !== settings.secret) return refuse("invalid-input-secret")
  if (response === undefined) return refuse("missing-input-response")
  if (response === settings.hanging) return "hang"
  if (response !== settings.passing) return refuse("invalid-input-response")
  const challenge = { challenge_ts: "2030-01-01T00:00:00.000Z", hostname: "app.example.com" }
  return settings.provider === "hcaptcha"
    ? { status: 200, json: { success: true, ...challenge, credit: false } }
    : { status: 200, json: { success: true, ...challenge, "error-codes": [], action: "", cdata: "" } }
}
