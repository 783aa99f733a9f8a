import type { KeyObject } from "node:crypto"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseSamlPrivateKey } from "../domain/SamlKey.js"
import type { SamlConfig } from "./AuthConfig.js"
import { isAbsoluteUrl, type SettingsReader } from "./SettingsReader.js"

const readKey = (r: SettingsReader, name: string, label: string): Option.Option<Redacted.Redacted<KeyObject>> =>
  Option.flatMap(r.secret(name), (value) => {
    const parsed = parseSamlPrivateKey(Redacted.value(value), label)
    if (typeof parsed === "string") {
      r.fail(r.spelledAs(name), parsed)
      return Option.none()
    }
    return Option.some(Redacted.make(parsed))
  })

/**
 * SAML_*: GoTrue's SAML settings (conf/saml.go) and their start-up checks. The keys are read whether or not SAML is
 * on (a bad key fails the start either way, as in GoTrue); SAML_PRIVATE_KEY is required when it is on.
 */
export const readSamlSettings = (r: SettingsReader, apiExternalUrl: string): SamlConfig => {
  const enabled = r.boolean("SAML_ENABLED", false)
  const privateKey = readKey(r, "SAML_PRIVATE_KEY", "SAML private key")
  if (enabled && Option.isNone(privateKey) && Option.isNone(r.string("SAML_PRIVATE_KEY"))) {
    r.fail(r.canonical("SAML_PRIVATE_KEY"), "is required when SAML_ENABLED is true")
  }
  const nextPrivateKey = readKey(r, "SAML_PRIVATE_KEY_NEXT", "SAML next private key")
  let relayStateValidity = r.duration("SAML_RELAY_STATE_VALIDITY_PERIOD", Duration.minutes(2))
  if (Duration.toMillis(relayStateValidity) < 0) {
    r.fail(r.spelledAs("SAML_RELAY_STATE_VALIDITY_PERIOD"), "SAML RelayState validity period should be a positive duration")
  }
  if (Duration.toMillis(relayStateValidity) === 0) relayStateValidity = Duration.minutes(2)
  const ownUrl = r.string("SAML_EXTERNAL_URL")
  if (Option.isSome(ownUrl) && !isAbsoluteUrl(ownUrl.value)) r.fail(r.spelledAs("SAML_EXTERNAL_URL"), "must be an absolute URL")
  const externalUrl = Option.getOrElse(ownUrl, () => apiExternalUrl)
  return {
    enabled,
    privateKey,
    nextPrivateKey,
    allowEncryptedAssertions: r.boolean("SAML_ALLOW_ENCRYPTED_ASSERTIONS", false),
    relayStateValidity,
    externalUrl,
    rateLimitAssertion: r.integer("SAML_RATE_LIMIT_ASSERTION", 15, { min: 0 })
  }
}
