/**
 * What the browser tests share: Debian's chromium driven by playwright-core (which downloads no browser of its own),
 * an app server on another origin that serves a page and its scripts, and pages that keep what the browser refused.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { type BrowserContext, chromium, type Page } from "playwright-core"

export const CHROMIUM = process.env["GATEHOUSE_CHROMIUM"] ?? "/usr/bin/chromium"

/** Why a browser test cannot run here, for its one skipped test's name; undefined when chromium is there. */
export const chromiumMissing: string | undefined = existsSync(CHROMIUM) ? undefined :
  `SKIPPED: no chromium at ${CHROMIUM}; install Debian's (apt-get install chromium), as .ci/run does, or point GATEHOUSE_CHROMIUM at one`

// What works on this machine: no sandbox (CI runs as root), no GPU, nothing that calls out to Google's services.
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"
]

/** The origin of the app's own server, which serves only the page and its scripts. */
export class AppOrigin extends Context.Tag("test/AppOrigin")<AppOrigin, string>() {}

export interface AppFile {
  readonly type: string
  readonly body: string | Buffer
}

/** The app's server on a port of its own (so another origin than the server under test): `files` by path. */
export const AppServerLive = (files: Effect.Effect<Readonly<Record<string, AppFile>>>) =>
  Layer.scoped(AppOrigin, Effect.acquireRelease(
    Effect.flatMap(files, (served) => Effect.async<{ readonly origin: string; readonly close: () => void }>((resume) => {
      const server = createServer((request, response) => {
        const file = served[(request.url ?? "").split("?", 1)[0]!]
        if (file === undefined) response.writeHead(404).end()
        else response.writeHead(200, { "content-type": file.type }).end(file.body)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ origin: `http://127.0.0.1:${port}`, close: () => server.close() }))
      })
    })),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ origin }) => origin)))

/** One chromium for the file, on a fresh profile that is removed with it. */
export class Browser extends Context.Tag("test/Browser")<Browser, BrowserContext>() {}

export const BrowserLive = Layer.scoped(Browser, Effect.acquireRelease(
  Effect.promise(async () => {
    const profile = mkdtempSync(join(tmpdir(), "gatehouse-chromium-"))
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 60_000
    })
    context.setDefaultTimeout(30_000)
    return { context, profile }
  }),
  ({ context, profile }) => Effect.promise(() => context.close().finally(() => rmSync(profile, { recursive: true, force: true })))
).pipe(Effect.map(({ context }) => context)))

/**
 * A page whose console errors (CORS and CSP refusals among them) and failed requests are kept, so an assertion can
 * say what the browser refused. An answer with an error status is logged too, and is no problem: tests expect some.
 * Every console line is kept besides, in `console`.
 */
export const openPage = (context: BrowserContext) =>
  Effect.promise(async () => {
    const page = await context.newPage()
    const problems: Array<string> = []
    const console: Array<string> = []
    page.on("console", (message) => {
      console.push(message.text())
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource: the server responded with a status of")) {
        problems.push(message.text())
      }
    })
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
    page.on("requestfailed", (request) => problems.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`))
    return { page, problems, console }
  })

export const inPage = <A, Arg>(page: Page, fn: (arg: Arg) => Promise<A> | A, arg: Arg): Effect.Effect<A> =>
  Effect.promise(() => page.evaluate(fn as any, arg) as Promise<A>)
