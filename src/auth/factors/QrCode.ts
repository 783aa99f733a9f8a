import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { lazyModule } from "../../platform/LazyModule.js"

// qrcode (and its PNG encoder) is imported for the first TOTP enrolment, not at start-up: only enrolment draws one.
const qrcode = lazyModule("qrcode", () => import("qrcode"))

/** The QR code could not be made: the URI does not fit a QR code at level H (about 1,250 bytes). */
export class QrCodeFailed extends Data.TaggedError("QrCodeFailed")<{ readonly reason: string }> {}

/**
 * The QR code of an otpauth URI as raw SVG markup, at error-correction level H as GoTrue makes it: the enrolment
 * answer carries the markup itself, and auth-js prefixes `data:image/svg+xml;utf-8,`.
 */
export const qrCodeSvg = (uri: string): Effect.Effect<string, QrCodeFailed> =>
  Effect.flatMap(
    Effect.mapError(qrcode, ({ message }) => new QrCodeFailed({ reason: message })),
    ({ toString: renderQrCode }) =>
      Effect.tryPromise({
        try: () => renderQrCode(uri, { type: "svg", errorCorrectionLevel: "H" }),
        catch: (error) => new QrCodeFailed({ reason: error instanceof Error ? error.message : String(error) })
      })
  )
