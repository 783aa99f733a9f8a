import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { invalidChannelMessage, textChannel } from "../../../src/auth/domain/TextChannel.js"

describe("textChannel", () => {
  it.prop("no channel, or sms, is sms with any provider", [FastCheck.constantFrom(undefined, null, "", "sms"), FastCheck.boolean()], ([requested, whatsapp]) => {
    expect(textChannel(requested, whatsapp)).toEqual(Either.right("sms"))
  })

  it.prop("whatsapp only through a provider that sends it, else GoTrue's 400", [FastCheck.boolean()], ([whatsapp]) => {
    const chosen = textChannel("whatsapp", whatsapp)
    expect(Either.isRight(chosen) ? chosen.right : [chosen.left.status, chosen.left.code, chosen.left.message])
      .toEqual(whatsapp ? "whatsapp" : [400, "validation_failed", invalidChannelMessage])
  })

  it.prop("any other value is GoTrue's 400, whatever the provider", [FastCheck.string().filter((s) => !["", "sms", "whatsapp"].includes(s)), FastCheck.boolean()], ([requested, whatsapp]) => {
    const chosen = textChannel(requested, whatsapp)
    expect(Either.isLeft(chosen) && [chosen.left.code, chosen.left.message]).toEqual(["validation_failed", invalidChannelMessage])
  })
})
