import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import { MAX_METADATA_BYTES, metadataBytes, metadataTooLarge } from "../../../src/auth/domain/MetadataSize.js"

const metadata = FastCheck.dictionary(FastCheck.string({ maxLength: 20 }), FastCheck.jsonValue({ maxDepth: 3 }))

describe("metadataTooLarge", () => {
  it.prop("refuses exactly when the two objects' JSON together exceed the limit", { user: metadata, app: metadata },
    ({ app, user }) => {
      const total = Buffer.byteLength(JSON.stringify(user)) + Buffer.byteLength(JSON.stringify(app))
      expect(Option.isSome(metadataTooLarge(user, app))).toBe(total > MAX_METADATA_BYTES)
    })

  it("counts UTF-8 bytes, not characters, at the boundary", () => {
    // {"k":"…"} is 8 bytes of JSON around the value, and an empty app_metadata {} is 2 more.
    const fits = { k: "x".repeat(MAX_METADATA_BYTES - 10) }
    expect(metadataBytes(fits) + metadataBytes({})).toBe(MAX_METADATA_BYTES)
    expect(metadataTooLarge(fits, {})).toStrictEqual(Option.none())
    expect(Option.isSome(metadataTooLarge({ k: "x".repeat(MAX_METADATA_BYTES - 9) }, {}))).toBe(true)
    // 2 bytes each: half as many characters reach the same size.
    expect(Option.isSome(metadataTooLarge({ k: "é".repeat((MAX_METADATA_BYTES - 10) / 2 + 1) }, {}))).toBe(true)
    expect(metadataTooLarge({ k: "é".repeat((MAX_METADATA_BYTES - 10) / 2) }, {})).toStrictEqual(Option.none())
  })
})
