import { createPublicKey, type KeyObject, sign } from "node:crypto"
import { AsnConvert, OctetString } from "@peculiar/asn1-schema"
import * as x509 from "@peculiar/asn1-x509"

const SHA256_WITH_RSA = "1.2.840.113549.1.1.11"
const COMMON_NAME = "2.5.4.3"
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/

export interface CertificateFields {
  readonly commonName: string
  readonly notBefore: Date
  readonly notAfter: Date
  /** Subject alternative DNS names. */
  readonly dnsNames?: ReadonlyArray<string>
  /** KeyUsage: digitalSignature always, dataEncipherment too when set. */
  readonly dataEncipherment?: boolean
}

/**
 * A self-signed X.509 certificate (DER) for an RSA key, signed sha256WithRSAEncryption, serial 0: how a SAML party
 * publishes its key in metadata (the certificate's own validity is not what SAML peers check; the metadata's is).
 * Encoded as Go's crypto/x509 encodes it, so that with GoTrue's fields (spCertificate) the DER is byte for byte what
 * GoTrue publishes for the same key (RSA PKCS#1 v1.5 signatures are deterministic).
 */
export const selfSignedCertificate = (key: KeyObject, fields: CertificateFields): Buffer => {
  const spki = AsnConvert.parse(createPublicKey(key).export({ type: "spki", format: "der" }), x509.SubjectPublicKeyInfo)
  const name = new x509.Name([
    new x509.RelativeDistinguishedName([
      new x509.AttributeTypeAndValue({
        type: COMMON_NAME,
        // As Go's encoding/asn1 writes a string: PrintableString when every character allows it, else UTF8String.
        value: new x509.AttributeValue(PRINTABLE.test(fields.commonName) ? { printableString: fields.commonName } : { utf8String: fields.commonName })
      })
    ])
  ])
  const algorithm = new x509.AlgorithmIdentifier({ algorithm: SHA256_WITH_RSA, parameters: null })
  const usage = new x509.KeyUsage(
    x509.KeyUsageFlags.digitalSignature | (fields.dataEncipherment === true ? x509.KeyUsageFlags.dataEncipherment : 0)
  )
  const extensions = [
    new x509.Extension({ extnID: x509.id_ce_keyUsage, critical: true, extnValue: new OctetString(AsnConvert.serialize(usage)) })
  ]
  if (fields.dnsNames !== undefined && fields.dnsNames.length > 0) {
    const names = new x509.SubjectAlternativeName(fields.dnsNames.map((dNSName) => new x509.GeneralName({ dNSName })))
    extensions.push(new x509.Extension({ extnID: x509.id_ce_subjectAltName, critical: false, extnValue: new OctetString(AsnConvert.serialize(names)) }))
  }
  const tbs = new x509.TBSCertificate({
    version: x509.Version.v3,
    serialNumber: new Uint8Array([0]).buffer,
    signature: algorithm,
    issuer: name,
    subject: name,
    validity: new x509.Validity({ notBefore: fields.notBefore, notAfter: fields.notAfter }),
    subjectPublicKeyInfo: spki,
    extensions: new x509.Extensions(extensions)
  })
  const signature = sign("sha256", Buffer.from(AsnConvert.serialize(tbs)), key)
  const certificate = new x509.Certificate({ tbsCertificate: tbs, signatureAlgorithm: algorithm, signatureValue: new Uint8Array(signature).buffer })
  return Buffer.from(AsnConvert.serialize(certificate))
}

/**
 * The SP's certificate for its key, with GoTrue's fields (conf/saml.go): CN "SAML 2.0 Certificate for <host>", SAN
 * DNS `_samlsp.<host>` (the host of API_EXTERNAL_URL, without port), valid from the Unix epoch for 200 years,
 * digitalSignature (+ dataEncipherment when encrypted assertions are allowed).
 */
export const spCertificate = (key: KeyObject, host: string, encryption: boolean): Buffer =>
  selfSignedCertificate(key, {
    commonName: `SAML 2.0 Certificate for ${host}`,
    notBefore: new Date(0),
    notAfter: new Date(Date.UTC(2170, 0, 1)),
    dnsNames: [`_samlsp.${host}`],
    dataEncipherment: encryption
  })
