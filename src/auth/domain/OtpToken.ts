import { createHash, timingSafeEqual } from "node:crypto"

/**
 * GoTrue's stored form of an emailed or texted code: hex(sha224(recipient + code)). Using the same formula
 * keeps links and codes issued by either server valid on the other when they share a database.
 */
export const otpTokenHash = (recipient: string, otp: string): string =>
  createHash("sha224").update(recipient + otp).digest("hex")

/**
 * Whether a presented secret equals the stored one, in time that does not depend on where they differ. Nothing
 * stored (null or "") never matches.
 */
export const sameSecret = (stored: string | null, presented: string): boolean => {
  if (stored === null || stored === "") return false
  const expected = Buffer.from(stored)
  const actual = Buffer.from(presented)
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

/** Whether `otp` is the code whose hash is stored, compared in constant time. */
export const matchesOtp = (stored: string | null, recipient: string, otp: string): boolean =>
  sameSecret(stored, otpTokenHash(recipient, otp))
