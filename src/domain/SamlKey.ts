import { createPrivateKey, type KeyObject } from "node:crypto"

const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * SAML_PRIVATE_KEY as GoTrue reads it: standard Base64 of a PKCS#1 DER RSA key, public exponent 65537, at least
 * 2048 bits. The key, or GoTrue's complaint about it (`label` is "SAML private key" or "SAML next private key").
 */
export const parseSamlPrivateKey = (value: string, label: string): KeyObject | string => {
  const trimmed = value.trim()
  if (!STANDARD_BASE64.test(trimmed) || trimmed.length % 4 !== 0) return `${label} not in standard Base64 format`
  let key: KeyObject
  try {
    key = createPrivateKey({ key: Buffer.from(trimmed, "base64"), format: "der", type: "pkcs1" })
  } catch {
    return `${label} not in PKCS#1 format`
  }
  const details = key.asymmetricKeyDetails
  if (key.asymmetricKeyType !== "rsa" || details === undefined) return `${label} not in PKCS#1 format`
  if (details.publicExponent !== 65537n) return `${label} should use the 65537 (0x10001) RSA public exponent`
  if ((details.modulusLength ?? 0) < 2048) return `${label} must be at least RSA 2048`
  return key
}
