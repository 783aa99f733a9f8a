import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Logger, LogLevel, Option, Queue, Ref, TestClock } from "effect"
import { MailTemplates, templateFetchTimeout, templateMaxAge, templateRetryAfter } from "../../../src/auth/messages/MailTemplates.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { unusedPort } from "../../platform/LocalServers.js"
import { testConfig } from "../../support/TestServer.js"
import { startTemplateServer } from "./TemplateServer.js"

/*
 * The Live service over real HTTP (FetchHttpClient to a local server) on TestClock, so the 10-minute cache and
 * the 10-second timeout are crossed by moving the clock.
 */

const withTemplate = (url: string) =>
  MailTemplates.Default.pipe(
    Layer.provide(configLayer(testConfig({ AUTH_MAILER_TEMPLATES_CONFIRMATION: url }))),
    Layer.provide(Logger.minimumLogLevel(LogLevel.None))
  )

const confirmation = Effect.flatMap(MailTemplates, (templates) =>
  templates.render("confirmation", "en", { Email: "a&b@example.com", ConfirmationURL: "http://x/verify?token=t&type=signup" }))

/** How many requests the server has received so far (it records each before answering). */
const drain = (requests: Queue.Dequeue<string>) => Effect.map(Queue.takeAll(requests), (taken) => taken.length)

describe("MailTemplates (Live)", () => {
  it.scoped("renders the fetched template, and fetches it again only after the maximum age", () =>
    Effect.gen(function*() {
      const server = yield* startTemplateServer({ status: 200, body: `<a href="{{ .ConfirmationURL }}">{{.Email}}</a>` })
      yield* Effect.gen(function*() {
        expect(yield* confirmation).toStrictEqual(
          Option.some(`<a href="http://x/verify?token=t&amp;type=signup">a&amp;b@example.com</a>`)
        )
        yield* Ref.set(server.answer, { status: 200, body: "edited {{ .Email }}" })
        yield* confirmation
        expect(yield* drain(server.requests)).toBe(1)
        yield* TestClock.adjust(Duration.sum(templateMaxAge, Duration.millis(1)))
        expect(yield* confirmation).toStrictEqual(Option.some("edited a&amp;b@example.com"))
        expect(yield* drain(server.requests)).toBe(1)
      }).pipe(Effect.provide(withTemplate(server.url)))
    }))

  it.scoped("a non-2xx answer or an empty body gives None, and is tried again after a while", () =>
    Effect.gen(function*() {
      const server = yield* startTemplateServer({ status: 404, body: "<h1>Not Found</h1>" })
      yield* Effect.gen(function*() {
        expect(yield* confirmation).toStrictEqual(Option.none())
        yield* Ref.set(server.answer, { status: 200, body: "  \n" })
        expect(yield* confirmation).toStrictEqual(Option.none())
        expect(yield* drain(server.requests)).toBe(1)
        yield* TestClock.adjust(Duration.sum(templateRetryAfter, Duration.millis(1)))
        expect(yield* confirmation).toStrictEqual(Option.none())
        yield* Ref.set(server.answer, { status: 200, body: "now {{ .Email }}" })
        yield* TestClock.adjust(Duration.sum(templateRetryAfter, Duration.millis(1)))
        expect(yield* confirmation).toStrictEqual(Option.some("now a&amp;b@example.com"))
        expect(yield* drain(server.requests)).toBe(2)
      }).pipe(Effect.provide(withTemplate(server.url)))
    }))

  it.scoped("a server that does not answer gives None after the timeout", () =>
    Effect.gen(function*() {
      const server = yield* startTemplateServer("hang")
      yield* Effect.gen(function*() {
        const rendering = yield* Effect.fork(confirmation)
        // The request has arrived, so the timeout is running.
        yield* Queue.take(server.requests)
        yield* TestClock.adjust(templateFetchTimeout)
        expect(yield* Fiber.join(rendering)).toStrictEqual(Option.none())
      }).pipe(Effect.provide(withTemplate(server.url)))
    }))

  it.scoped("a server that is down gives None", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      expect(yield* Effect.provide(confirmation, withTemplate(`http://127.0.0.1:${port}/t.html`))).toStrictEqual(Option.none())
    }))

  it.effect("no template configured: None, and nothing is fetched", () =>
    Effect.gen(function*() {
      const templates = yield* MailTemplates
      expect(yield* templates.render("confirmation", "en", {})).toStrictEqual(Option.none())
    }).pipe(Effect.provide(MailTemplates.Default.pipe(Layer.provide(configLayer(testConfig()))))))
})
