/**
 * The IAM service from a real browser, as a web app on another origin calls it: Debian's chromium loads a page from a
 * second local server (another port, so another origin) and calls the gRPC port, which must grant every CORS
 * preflight and let the page read every answer and status.
 * - The README's Connect snippet, taken from README.md and bundled with esbuild as it is written (only its base URL
 *   is pointed at the test server), runs and logs what the README says it logs.
 * - One flow (register, a refused login, login, calls with the bearer token and a timeout, a refused call, refresh,
 *   logout) through connect-web's Connect (JSON, binary) and gRPC-Web transports and through the official grpc-web
 *   client in its text (default) and binary modes (test/browser/iam/IamFlows.ts, bundled with esbuild).
 * - A server stream (health Watch) through the grpc-web client: its first message arrives while the stream is open.
 *
 * Without chromium the file skips with a test whose name says why; .ci/run installs it with apt-get.
 * At the HTTP level (preflights, refused origins): test/iam/GrpcPortCors.test.ts.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it, layer } from "@effect/vitest"
import { build, type Plugin } from "esbuild"
import { Effect, Layer, Logger, LogLevel } from "effect"
import type { Page } from "playwright-core"
import { IamEndpoints, IamTestServer } from "../iam/support/IamTestServer.js"
import { AppOrigin, AppServerLive, Browser, BrowserLive, chromiumMissing, inPage, openPage } from "./support/Chromium.js"
import type { iamFlows } from "./iam/IamFlows.js"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** The README's browser snippet: its one TypeScript block that makes a Connect transport. */
const readmeConnectSnippet = (): string => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!)
  const snippets = blocks.filter((block) => block.includes("createConnectTransport"))
  if (snippets.length !== 1) throw new Error(`README.md: expected one ts block with createConnectTransport, found ${snippets.length}`)
  return snippets[0]!
}

// Where the snippet points its transport; the page points it at the test server instead.
const README_BASE_URL = "\"http://127.0.0.1:50051\""

/** The snippet imports the generated code as an app keeps it (./gen/…); here that is src/gen. */
const generatedCode: Plugin = {
  name: "generated-code",
  setup: (builder) => {
    builder.onResolve({ filter: /^\.\/gen\// }, (args) =>
      args.importer.includes("node_modules") ? undefined : { path: join(ROOT, "src", args.path.replace(/\.js$/, ".ts")) })
  }
}

const bundle = (options: { readonly entry: string } | { readonly source: string }) =>
  Effect.promise(async () => {
    const result = await build({
      ...("entry" in options
        ? { entryPoints: [options.entry] }
        : { stdin: { contents: options.source, loader: "ts", resolveDir: ROOT, sourcefile: "readme-snippet.ts" } }),
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      logLevel: "silent",
      plugins: [generatedCode]
    })
    return result.outputFiles[0]!.text
  })

const PAGE = "<!doctype html><html><head><meta charset=\"utf-8\"><title>app</title>" +
  "<script type=\"module\" src=\"/flows.js\"></script></head><body><p>app</p></body></html>"

// The snippet runs as the page's module; its base URL comes from the page's address (?grpc=).
const README_PAGE = "<!doctype html><html><head><meta charset=\"utf-8\"><title>readme</title>" +
  "<script>globalThis.grpcBaseUrl = new URLSearchParams(location.search).get(\"grpc\")</script>" +
  "<script type=\"module\" src=\"/readme.js\"></script></head><body><p>readme</p></body></html>"

const AppLive = AppServerLive(Effect.gen(function*() {
  const snippet = readmeConnectSnippet()
  if (snippet.split(README_BASE_URL).length !== 2) throw new Error(`README.md: the snippet should name ${README_BASE_URL} once`)
  const flows = yield* bundle({ entry: join(ROOT, "test", "browser", "iam", "IamFlows.ts") })
  const readme = yield* bundle({ source: snippet.replace(README_BASE_URL, "(globalThis as any).grpcBaseUrl") })
  const script = "text/javascript; charset=utf-8"
  return {
    "/": { type: "text/html; charset=utf-8", body: PAGE },
    "/flows.js": { type: script, body: flows },
    "/readme.html": { type: "text/html; charset=utf-8", body: README_PAGE },
    "/readme.js": { type: script, body: readme }
  }
}))

// What the functions run in the page see (this file is compiled without the DOM's types).
declare const window: { readonly iamFlows: typeof iamFlows }

const server = IamTestServer().pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

/** The page, with the flows loaded. */
const flowsPage = Effect.gen(function*() {
  const opened = yield* openPage(yield* Browser)
  const origin = yield* AppOrigin
  yield* Effect.promise(() => opened.page.goto(origin))
  yield* Effect.promise(() => opened.page.waitForFunction(() => (globalThis as any).iamFlows !== undefined))
  return opened
})

const closePage = (page: Page) => Effect.promise(() => page.close())

if (chromiumMissing !== undefined) {
  const reason = chromiumMissing
  console.warn(`test/browser: ${reason}`)
  describe("the IAM service in chromium", () => {
    it.skip(reason, () => {})
  })
} else {
  layer(Layer.mergeAll(server, AppLive, BrowserLive), { timeout: 180_000, excludeTestServices: true })(
    "the IAM service in chromium, from another origin",
    (it) => {
      it.effect("the README's Connect snippet runs as written and logs what it says", () =>
        Effect.gen(function*() {
          const { grpc } = yield* IamEndpoints
          const { console, page, problems } = yield* openPage(yield* Browser)
          const origin = yield* AppOrigin
          const logged = page.waitForEvent("console", { predicate: (message) => message.type() === "log", timeout: 30_000 })
          yield* Effect.promise(() => page.goto(`${origin}/readme.html?grpc=${encodeURIComponent(`http://${grpc}`)}`))
          const line = yield* Effect.promise(() => logged.then((message) => message.text(), () => `no log line; console: ${console.join(" | ")}`))
          // The first account of a fresh database, as in the README's comment.
          expect(line, problems.join("\n")).toBe("1 0 true ada")
          expect(problems).toEqual([])
          yield* closePage(page)
        }))

      const clients = [
        { name: "connect-json", run: (url: string) => window.iamFlows.connect(url, false) },
        { name: "connect-binary", run: (url: string) => window.iamFlows.connect(url, true) },
        { name: "connect-web-grpc-web", run: (url: string) => window.iamFlows.connectGrpcWeb(url) },
        { name: "grpc-web-text", run: (url: string) => window.iamFlows.grpcWeb(url, "text") },
        { name: "grpc-web-binary", run: (url: string) => window.iamFlows.grpcWeb(url, "binary") }
      ] as const

      for (const client of clients) {
        it.effect(`${client.name}: register, login, authenticated calls, refresh and logout`, () =>
          Effect.gen(function*() {
            const { grpc } = yield* IamEndpoints
            const { page, problems } = yield* flowsPage
            const result = yield* Effect.promise(() => page.evaluate(client.run as any, `http://${grpc}`) as Promise<any>)
            const username = `browser-${client.name}`
            expect(result, problems.join("\n")).toEqual({
              registered: username,
              registeredId: true,
              // The status and its message reach the page: gRPC-Web's from the exposed headers or the trailers.
              wrongPassword: { code: 16, message: "invalid credentials" },
              myRoles: [],
              validated: { valid: true, username },
              forbidden: { code: 7, message: expect.stringMatching(/^permission denied: /) },
              rotated: true,
              afterRefresh: { valid: true, username },
              loggedOut: true,
              afterLogout: { valid: false, reason: "revoked" }
            })
            expect(problems).toEqual([])
            yield* closePage(page)
          }))
      }

      it.effect("grpc-web text: a server stream's first message arrives while the stream is open", () =>
        Effect.gen(function*() {
          const { grpc } = yield* IamEndpoints
          const { page, problems } = yield* flowsPage
          const status = yield* inPage(page, (url) => window.iamFlows.watchHealth(url), `http://${grpc}`)
          expect(status, problems.join("\n")).toBe("SERVING")
          expect(problems).toEqual([])
          yield* closePage(page)
        }))
    }
  )
}
