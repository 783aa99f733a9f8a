import { expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Ref } from "effect"
import { Outbox, type OutboxMessage } from "../../src/platform/mail/Outbox.js"
import { MemorySmsSender, OutboxSmsSender, SentSms, SmsSender } from "../../src/platform/sms/SmsSender.js"

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

it.effect("OutboxSmsSender keeps each text with its facts in the outbox, and logs one line without its body or code", () =>
  Effect.gen(function*() {
    const kept: Array<OutboxMessage> = []
    const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
    const capture = Logger.make(({ annotations, message }) => {
      lines.push({ message, annotations: Object.fromEntries(annotations) })
    })
    const outbox = Layer.succeed(Outbox, Outbox.of({ add: (message) => Effect.sync(() => void kept.push(message)), list: Effect.succeed([]) }))
    const about = { type: "sms", code: "424242", link: null, pending: { userId: "user-1", column: "confirmation_token", codeHash: "hash" } }
    const receipt = yield* Effect.flatMap(SmsSender, (sender) => sender.send({ to: "15551234567", body: "Your code is 424242", about })).pipe(
      Effect.provide(OutboxSmsSender("http://localhost:8081/_outbox").pipe(Layer.provide(outbox))),
      Effect.provide(Logger.replace(Logger.defaultLogger, capture))
    )

    expect(receipt).toEqual({ messageId: "outbox" })
    expect(kept).toEqual([{ channel: "sms", to: "15551234567", body: "Your code is 424242", about }])
    expect(lines).toEqual([{
      message: ["text not sent (no SMS provider): kept in the outbox"],
      annotations: { to: "15551234567", type: "sms", outbox: "http://localhost:8081/_outbox" }
    }])
  }))
