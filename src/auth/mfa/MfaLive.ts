import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { FactorType } from "../domain/FactorRow.js"
import { type FactorKind, FactorKinds } from "../factors/FactorKind.js"
import { AdminAuthenticatedLive } from "../http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "../http/AuthenticatedLive.js"
import { WebAuthnFactor } from "../webauthn/WebAuthnFactor.js"
import { AdminFactorsHttpLive } from "./AdminFactorsHttp.js"
import { FactorsHttpLive } from "./FactorsHttp.js"
import { Mfa } from "./Mfa.js"
import { PhoneFactor } from "./PhoneFactor.js"
import { TotpFactor } from "./TotpFactor.js"

/** The registered factor kinds, by type. A type missing here would answer as if its MFA_<TYPE>_* switches were off. */
const FactorKindsLive = Layer.effect(
  FactorKinds,
  Effect.map(
    Effect.all([TotpFactor, PhoneFactor, WebAuthnFactor]),
    (kinds: ReadonlyArray<FactorKind>) => new Map<FactorType, FactorKind>(kinds.map((kind) => [kind.type, kind]))
  )
).pipe(Layer.provide([TotpFactor.Default, PhoneFactor.Default, WebAuthnFactor.Default]))

/**
 * Second factors: the caller's factor routes behind the bearer check, the admin's behind the admin check, over the
 * MFA service; the shared floors come from AuthHttp (old challenges are swept by AuthHousekeeping).
 */
export const MfaLive = Layer.mergeAll(FactorsHttpLive, AdminFactorsHttpLive).pipe(
  Layer.provide([AuthenticatedLive, AdminAuthenticatedLive, Mfa.Default]),
  Layer.provide(FactorKindsLive)
)
