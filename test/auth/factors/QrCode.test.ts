import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { create as createQrCode } from "qrcode"
import { qrCodeSvg } from "../../../src/auth/factors/QrCode.js"
import { otpAuthUri } from "../../../src/domain/OtpAuthUri.js"
import { gotrueManifest } from "../../support/GoTrueFixture.js"

describe("qrCodeSvg", () => {
  const uri = gotrueManifest?.users.mfa_user.totp_uri ??
    "otpauth://totp/fixture:mfa.user@example.com?algorithm=SHA1&digits=6&issuer=fixture&period=30&secret=OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ"

  it.effect("is raw SVG markup (no data URL), the same for the same URI, another for another", () =>
    Effect.gen(function*() {
      const svg = yield* qrCodeSvg(uri)
      expect(svg.startsWith("<svg ")).toBe(true)
      expect(svg.trimEnd().endsWith("</svg>")).toBe(true)
      expect(yield* qrCodeSvg(uri)).toBe(svg)
      const other = Option.getOrThrow(otpAuthUri({ issuer: "fixture", account: "someone.else@example.com", secret: "OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ" }))
      expect(yield* qrCodeSvg(other)).not.toBe(svg)
    }))

  it.effect("is drawn at error-correction level H: its size is level H's for the URI (M's would be smaller)", () =>
    Effect.gen(function*() {
      const svg = yield* qrCodeSvg(uri)
      const viewBox = /viewBox="0 0 (\d+) (\d+)"/.exec(svg)
      const margin = 4
      expect(Number(viewBox?.[1])).toBe(createQrCode(uri, { errorCorrectionLevel: "H" }).modules.size + 2 * margin)
      expect(createQrCode(uri, { errorCorrectionLevel: "M" }).modules.size).toBeLessThan(
        createQrCode(uri, { errorCorrectionLevel: "H" }).modules.size
      )
    }))

  it.effect("fails, rather than dies, on a URI too long for any QR code at level H", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(qrCodeSvg(`otpauth://totp/${"x".repeat(4000)}`))
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "QrCodeFailed").toBe(true)
    }))
})
