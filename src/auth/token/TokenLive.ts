import * as Layer from "effect/Layer"
import { TokenCaptchaProtectedLive } from "../http/CaptchaProtectedLive.js"
import { IdTokenGrant } from "./IdTokenGrant.js"
import { PasswordGrant } from "./PasswordGrant.js"
import { PkceGrant } from "./PkceGrant.js"
import { TokenHttpLive } from "./TokenHttp.js"
import { Web3Grant } from "./Web3Grant.js"

/** POST /token: its handler behind the grant-aware captcha check, over its grants; the shared floors come from AuthHttp. */
export const TokenLive = TokenHttpLive.pipe(
  Layer.provide([TokenCaptchaProtectedLive, PasswordGrant.Default, PkceGrant.Default, IdTokenGrant.Default, Web3Grant.Default])
)
