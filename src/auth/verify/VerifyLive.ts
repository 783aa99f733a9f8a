import * as Layer from "effect/Layer"
import { Verify } from "./Verify.js"
import { VerifyHttpLive } from "./VerifyHttp.js"

/** Verification: its handlers over its service; the shared floors come from AuthHttp. */
export const VerifyLive = VerifyHttpLive.pipe(Layer.provide(Verify.Default))
