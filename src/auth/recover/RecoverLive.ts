import * as Layer from "effect/Layer"
import { CaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { Recover } from "./Recover.js"
import { RecoverHttpLive } from "./RecoverHttp.js"

/** Password recovery: its handler behind the captcha check, over its service; the shared floors come from AuthHttp. */
export const RecoverLive = RecoverHttpLive.pipe(Layer.provide([CaptchaProtectedLive, Recover.Default]))
