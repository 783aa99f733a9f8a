import { createServer, type Server } from "node:http"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Either, Layer, Ref } from "effect"
import { AuthMessages } from "../../src/auth/messages/AuthMessages.js"
import { OAUTH_PROVIDER_SPECS } from "../../src/auth/oauth/OAuthProviders.js"
import { type AppConfig, configLayer, type ConfigTags, formatConfigIssues, parseAppConfig } from "../../src/config/AppConfig.js"
import type { Database } from "../../src/platform/sql/Database.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { outboxPageUrl } from "../../src/platform/http/OutboxHttp.js"
import { Mailer, MailerError, MemoryMailer, OutboxMailer, type SentMail } from "../../src/platform/mail/Mailer.js"
import type { Outbox } from "../../src/platform/mail/Outbox.js"
import { type PasswordHasher, PasswordHasherTest } from "../../src/platform/PasswordHasher.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"
import { MemorySmsSender, OutboxSmsSender, type SentSms, SmsSender, UnconfiguredSmsSender } from "../../src/platform/sms/SmsSender.js"
import type { TokenSigner } from "../../src/platform/TokenSigner.js"
import { captchaFor, mailToOutbox, textsToOutbox, tokenSignerFor } from "../../src/platform/PortsLive.js"
import { AuthRoutesLive, outboxFor } from "../../src/cli/ServerLive.js"
import { TestDatabase } from "./TestDatabase.js"

/** Settings every test server starts from; a test adds or overrides its own. */
export const baseTestEnv: Readonly<Record<string, string>> = {
  AUTH_SITE_URL: "http://localhost:3000",
  API_EXTERNAL_URL: "http://localhost:9999",
  AUTH_JWT_SECRET: "test-secret-that-is-at-least-32-characters-long",
  // GoTrue's default, and the embedded one: pinned so a test never depends on how the mode is chosen.
  AUTH_MAILER_AUTOCONFIRM: "false",
  // GoTrue's send frequencies, which production keeps; the embedded default's 1 s is tested where it is meant.
  AUTH_SMTP_MAX_FREQUENCY: "900",
  AUTH_SMS_MAX_FREQUENCY: "60",
  // The instance-wide send quotas are shared by every test of a file; far out of reach unless a test lowers them.
  AUTH_RATE_LIMIT_EMAIL_SENT: "100000",
  AUTH_RATE_LIMIT_SMS_SENT: "100000",
  // Every test of a file verifies from 127.0.0.1, so the guess limit would count them all as one client. A hundred a
  // second, rather than more: the bucket's tolerance (29 intervals, 290 ms here) must outlast how long a loaded
  // machine takes between reading the clock and admitting, or a burst of concurrent guesses sees spurious refusals.
  AUTH_RATE_LIMIT_VERIFY_GUESSES: "30000",
  LOG_LEVEL: "warn"
}

/** The config as the server's composition reads it, with the auth registry's identity providers. */
export const testConfig = (env: Readonly<Record<string, string>> = {}): AppConfig =>
  Either.match(parseAppConfig({ ...baseTestEnv, ...env }, { oauthProviders: OAUTH_PROVIDER_SPECS }), {
    onLeft: (issues) => {
      throw new Error(formatConfigIssues(issues))
    },
    onRight: ({ config }) => config
  })

/** The base URL of a server started for the test on 127.0.0.1 and a free port. */
export class ServerUrl extends Context.Tag("test/ServerUrl")<ServerUrl, string>() {}

const ServerUrlLive = Layer.effect(
  ServerUrl,
  Effect.map(HttpServer.HttpServer, (server) => {
    const address = server.address
    if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  })
)

/**
 * The real HTTP stack (edge middleware, error boundary, handlers) on a real socket, over a migrated test
 * database, so tests talk to it with fetch and the real client libraries.
 */
export type TestServices =
  | ServerUrl
  | ConfigTags
  | Database
  | SentMail
  | SentSms
  | TokenSigner
  | MailOutage
  | RefusedMail
  | SmsOutage
  | Outbox
  | AuthMessages

/** Set to true and every mail fails as an unreachable SMTP server would: for the "nothing arrived" paths. */
export class MailOutage extends Effect.Service<MailOutage>()("test/MailOutage", { effect: Ref.make(false) }) {}

/** The recipients of mails the outage refused, oldest first. */
export class RefusedMail extends Effect.Service<RefusedMail>()("test/RefusedMail", { effect: Ref.make<ReadonlyArray<string>>([]) }) {}

const OutageAwareMailer = Layer.effect(
  Mailer,
  Effect.gen(function*() {
    const memory = yield* Mailer
    const outage = yield* MailOutage
    const refused = yield* RefusedMail
    return {
      send: (mail) =>
        Effect.flatMap(Ref.get(outage), (down) =>
          down
            ? Effect.zipRight(
              Ref.update(refused, (to) => [...to, mail.to]),
              Effect.fail(new MailerError({ message: "could not connect to the mail server", code: "ECONNECTION", permanent: false }))
            )
            : memory.send(mail))
    }
  })
).pipe(Layer.provideMerge(MemoryMailer), Layer.provideMerge(MailOutage.Default), Layer.provideMerge(RefusedMail.Default))

/**
 * Set to true and every text fails the way production does with no usable provider (UnconfiguredSmsSender), or
 * as a provider that refuses would.
 */
export class SmsOutage extends Effect.Service<SmsOutage>()("test/SmsOutage", { effect: Ref.make(false) }) {}

const OutageAwareSmsSender = Layer.effect(
  SmsSender,
  Effect.gen(function*() {
    const memory = yield* SmsSender
    const outage = yield* SmsOutage
    const down = yield* Effect.provide(SmsSender, UnconfiguredSmsSender("no SMS provider is configured"))
    return { send: (sms) => Effect.flatMap(Ref.get(outage), (isDown) => (isDown ? down : memory).send(sms)) }
  })
).pipe(Layer.provideMerge(MemorySmsSender), Layer.provideMerge(SmsOutage.Default))

/**
 * What the recorders accept also goes, as in production, through the embedded default's outbox mailer and sender
 * when the configuration has them: into the Outbox, with their log line.
 */
const AlsoKept = (config: AppConfig) => {
  const page = outboxPageUrl(config.api.host, config.api.port)
  const mail = Layer.effect(
    Mailer,
    Effect.gen(function*() {
      const recorded = yield* Mailer
      const kept = yield* Effect.provide(Mailer, OutboxMailer(page))
      return Mailer.of({ send: (message) => Effect.zipRight(recorded.send(message), kept.send(message)) })
    })
  )
  const texts = Layer.effect(
    SmsSender,
    Effect.gen(function*() {
      const recorded = yield* SmsSender
      const kept = yield* Effect.provide(SmsSender, OutboxSmsSender(page))
      return SmsSender.of({ send: (message) => Effect.tap(recorded.send(message), () => kept.send(message)) })
    })
  )
  return Layer.merge(mailToOutbox(config) ? mail : Layer.effect(Mailer, Mailer), textsToOutbox(config) ? texts : Layer.effect(SmsSender, SmsSender))
}

/** Recorded mail and texts, also kept in the Outbox when the configuration has one, as in production. */
const TestMessaging = (config: AppConfig) =>
  AlsoKept(config).pipe(Layer.provideMerge(Layer.merge(OutageAwareMailer, OutageAwareSmsSender)))

/**
 * Test doubles for what cannot run here or would only slow tests down: mail and texts are recorded (SentMail,
 * SentSms), bcrypt runs at its minimum cost. Tokens are signed by the real signer from the test config, and codes
 * are as random as in production (tests read them from the recorded messages). Captcha is the production port:
 * a test that turns it on points SECURITY_CAPTCHA_VERIFY_URL at a local stand-in for the provider. The Outbox is
 * the production one, in the test database, where the configuration has one.
 */
export const TestPorts = (config: AppConfig) =>
  Layer.mergeAll(tokenSignerFor(config), PasswordHasherTest, TestMessaging(config), SecureRandom.Live, captchaFor(config)).pipe(
    Layer.provideMerge(outboxFor(config)),
    Layer.orDie
  )

/**
 * A server over a database it is given, already migrated: wrapped in Layer.fresh it is a second instance beside
 * another over the same database, sharing nothing else (its own ports, recorded mail and outage switches).
 */
export const TestServerOver = (
  env: Readonly<Record<string, string>> = {},
  { host = "127.0.0.1", hotLane = true, node: given, passwordHasher, smsSender }: TestServerOptions = {}
): Layer.Layer<Exclude<TestServices, Database>, never, Database> =>
  Layer.unwrapEffect(Effect.sync(() => {
    const node = given ?? createServer()
    return routesOn(testConfig(env), passwordHasher, smsSender, hotLane ? node : undefined).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => node, { host, port: 0 })),
      Layer.orDie
    )
  })) as Layer.Layer<Exclude<TestServices, Database>, never, Database>

/** The routes, ports and config of a test server, on whatever HTTP server the caller gives (`node`: see AuthRoutesLive). */
const routesOn = (config: AppConfig, passwordHasher?: Layer.Layer<PasswordHasher>, smsSender?: Layer.Layer<SmsSender>, node?: Server) => {
  // Merged after TestPorts, a given hasher or sender replaces the test one.
  const ports = Layer.mergeAll(
    TestPorts(config),
    passwordHasher ?? Layer.empty,
    smsSender ?? Layer.empty
  )
  // AuthMessages.Default is the very layer the auth routes are built with, so the test gets the server's instance
  // (layers are shared by reference within one build) and can wait for the mails it posted (settledMail).
  return Layer.mergeAll(AuthRoutesLive(config, node), ServerUrlLive, AuthMessages.Default).pipe(
    Layer.provideMerge(ports),
    Layer.provideMerge(configLayer(config))
  )
}

export interface TestServerOptions {
  /** Where the server listens: 127.0.0.1 unless a test needs a non-loopback client (0.0.0.0). */
  readonly host?: string
  /** Serve GET /user on the hot lane as production does (the default); false: every request takes the router. */
  readonly hotLane?: boolean
  /** The Node server to serve on (a test that watches which requests reach the app); a new one by default. */
  readonly node?: Server
  /** Instead of bcrypt at its minimum cost (a test of what production's cost takes). */
  readonly passwordHasher?: Layer.Layer<PasswordHasher>
  /** Instead of the recorder (SentSms then records nothing): a real provider's sender pointed at a local stand-in. */
  readonly smsSender?: Layer.Layer<SmsSender>
}

/**
 * A server whose settings name its own address (SITE_URL and API_EXTERNAL_URL as where it listens, so that links
 * land on it), over a fresh migrated database. The address is known only once the socket is bound, so the port is
 * taken first and the configuration read from `env(url)` after.
 */
export const SelfAddressedTestServer = (env: (url: string) => Readonly<Record<string, string>>): Layer.Layer<TestServices> =>
  Layer.unwrapEffect(Effect.map(ServerUrl, (url) => {
    const config = testConfig(env(url))
    const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))
    return routesOn(config).pipe(Layer.provideMerge(Migrated), Layer.provideMerge(TestDatabase))
  })).pipe(
    Layer.provideMerge(ServerUrlLive),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.orDie
  ) as Layer.Layer<TestServices>

export const TestServer = (
  env: Readonly<Record<string, string>> = {},
  options: TestServerOptions = {}
): Layer.Layer<TestServices> => {
  const config = testConfig(env)
  const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))
  return TestServerOver(env, options).pipe(
    Layer.provideMerge(Migrated),
    Layer.provideMerge(TestDatabase),
    Layer.orDie
  ) as Layer.Layer<TestServices>
}
