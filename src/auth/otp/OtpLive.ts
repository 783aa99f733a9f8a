import * as Layer from "effect/Layer"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { Otp } from "./Otp.js"
import { OtpHttpLive } from "./OtpHttp.js"

/** Passwordless sign-in: its handlers behind the captcha check, over its service; the shared floors come from AuthHttp. */
export const OtpLive = OtpHttpLive.pipe(Layer.provide([CaptchaProtectedLive, Otp.Default]))
