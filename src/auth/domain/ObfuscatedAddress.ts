import { createHash } from "node:crypto"

/**
 * What a soft-deleted user's email or phone becomes (GoTrue's `obfuscateValue`): base64url(sha256(id + value)),
 * unique per user and address yet unusable as either, so the address is free for a new account and the row can
 * no longer be found by it. Phones are cut to 15 characters, the column's E.164 length.
 */
export const obfuscatedAddress = (userId: string, value: string, kind: "email" | "phone"): string => {
  const digest = createHash("sha256").update(userId + value).digest("base64url")
  return kind === "phone" ? digest.slice(0, 15) : digest
}
