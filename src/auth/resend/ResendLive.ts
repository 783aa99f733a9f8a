import * as Layer from "effect/Layer"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { Resend } from "./Resend.js"
import { ResendHttpLive } from "./ResendHttp.js"

/** Resending a confirmation: its handler behind the captcha check, over its service; the shared floors come from AuthHttp. */
export const ResendLive = ResendHttpLive.pipe(Layer.provide([CaptchaProtectedLive, Resend.Default]))
