import * as Layer from "effect/Layer"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { Signup } from "./Signup.js"
import { SignupHttpLive } from "./SignupHttp.js"

/** Sign-up: its handlers behind the captcha check, over its service; the shared floors come from AuthHttp. */
export const SignupLive = SignupHttpLive.pipe(Layer.provide([CaptchaProtectedLive, Signup.Default]))
