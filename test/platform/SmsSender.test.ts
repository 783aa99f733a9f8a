import { expect, layer } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { MemorySmsSender, SentSms, SmsSender } from "../../src/platform/SmsSender.js"

layer(MemorySmsSender)("MemorySmsSender", (it) => {
  it.effect("records messages in order and numbers the receipts", () =>
    Effect.gen(function*() {
      const sender = yield* SmsSender
      const first = yield* sender.send({ to: "15551234567", body: "Your code is 111111" })
      const second = yield* sender.send({ to: "447700900123", body: "Your code is 222222" })
      const { messages } = yield* SentSms

      expect([first, second]).toEqual([{ messageId: "memory-1" }, { messageId: "memory-2" }])
      expect(yield* Ref.get(messages)).toEqual([
        { to: "15551234567", body: "Your code is 111111" },
        { to: "447700900123", body: "Your code is 222222" }
      ])
    }))
})
