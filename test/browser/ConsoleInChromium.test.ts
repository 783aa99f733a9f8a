/**
 * The admin console in a real browser (issue 31): Debian's chromium signs in with the service_role key, filters the
 * users, opens one, bans them, and finds the ban in the audit log, all under the console's CSP (no script, its one
 * style sheet), with nothing refused by the browser. The server serves the IAM service too, so the IAM page lists
 * the roles made here.
 *
 * With GATEHOUSE_CONSOLE_SCREENSHOTS=1 it also writes each page at a phone's size and a desktop's to docs/console/
 * (the README's pictures); without it nothing is written.
 *
 * Without chromium the file skips with a test whose name says why; .ci/run installs it with apt-get.
 */
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import type { Page } from "playwright-core"
import { OPERATOR } from "../../src/iam/access/Authority.js"
import { Roles } from "../../src/iam/access/Roles.js"
import { adminJwt, PASSWORD, raw, uniqueEmail } from "../auth/acceptance/AcceptanceKit.js"
import { IamEndpoints, IamTestServer } from "../iam/support/IamTestServer.js"
import { Browser, BrowserLive, chromiumMissing, openPage } from "./support/Chromium.js"

const KEY = adminJwt()
const SHOTS = process.env["GATEHOUSE_CONSOLE_SCREENSHOTS"] === "1"
  ? join(dirname(fileURLToPath(import.meta.url)), "..", "..", "docs", "console")
  : undefined

const SIZES = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const

/** The page at both sizes into docs/console/<name>-<size>.png, when screenshots are asked for. */
const shoot = (page: Page, name: string) =>
  Effect.promise(async () => {
    if (SHOTS === undefined) return
    mkdirSync(SHOTS, { recursive: true })
    for (const [size, viewport] of Object.entries(SIZES)) {
      await page.setViewportSize(viewport)
      await page.screenshot({ path: join(SHOTS, `${name}-${size}.png`), fullPage: true })
    }
    await page.setViewportSize(SIZES.desktop)
  })

// What the function run in the page sees (this file is compiled without the DOM's types).
declare const getComputedStyle: (element: unknown) => { readonly backgroundColor: string }

const step = <A>(run: () => Promise<A>) => Effect.promise(run)

const server = IamTestServer({ AUTH_ADMIN_CONSOLE_ENABLED: "true" }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

if (chromiumMissing !== undefined) {
  const reason = chromiumMissing
  console.warn(`test/browser: ${reason}`)
  describe("the admin console in chromium", () => {
    it.skip(reason, () => {})
  })
} else {
  layer(Layer.mergeAll(server, BrowserLive), { timeout: 180_000, excludeTestServices: true })("the admin console in chromium", (it) => {
    it.effect("sign in, filter the users, open one, ban them, and see the ban in the audit log", () =>
      Effect.gen(function*() {
        const { http } = yield* IamEndpoints
        const roles = yield* Roles
        const editor = yield* Effect.orDie(roles.createRole("editor", "Edits the catalogue"))
        const read = yield* Effect.orDie(roles.createPermission({ name: "product.read", description: "Read products", resource: "PRODUCT", action: "READ" }))
        const update = yield* Effect.orDie(roles.createPermission({ name: "product.update", description: null, resource: "PRODUCT", action: "UPDATE" }))
        yield* Effect.orDie(roles.grant(OPERATOR, editor.id, read.id))
        yield* Effect.orDie(roles.grant(OPERATOR, editor.id, update.id))
        const target = uniqueEmail("grace")
        const others = [uniqueEmail("ada"), uniqueEmail("alan")]
        for (const email of [...others, target]) {
          const made = yield* raw(http, "/admin/users", {
            bearer: KEY,
            body: { email, password: PASSWORD, email_confirm: true, user_metadata: { full_name: email.split("-")[0] } }
          })
          expect(made.status).toBe(200)
        }
        // A session for the user page to list.
        expect((yield* raw(http, "/token?grant_type=password", { body: { email: target, password: PASSWORD } })).status).toBe(200)

        const { page, problems } = yield* openPage(yield* Browser)
        yield* step(() => page.setViewportSize(SIZES.desktop))
        yield* step(() => page.goto(`${http}/_admin`))
        yield* shoot(page, "sign-in")
        yield* step(() => page.getByLabel("service_role key").fill(KEY))
        yield* step(() => page.getByRole("button", { name: "Sign in" }).click())
        yield* step(() => page.waitForURL(`${http}/_admin/users`))
        // The style sheet applied under the CSP: the header is dark.
        expect(yield* step(() => page.locator("header").evaluate((el) => getComputedStyle(el).backgroundColor))).toBe("rgb(29, 35, 43)")
        for (const email of [...others, target]) expect(yield* step(() => page.getByRole("link", { name: email }).count())).toBe(1)
        yield* shoot(page, "users")

        yield* step(() => page.getByLabel("Email, phone or name contains").fill(target))
        yield* step(() => page.getByRole("button", { name: "Filter" }).click())
        yield* step(() => page.waitForURL(/\/_admin\/users\?filter=/))
        expect(yield* step(() => page.locator("tbody tr").count())).toBe(1)
        for (const email of others) expect(yield* step(() => page.getByRole("link", { name: email }).count())).toBe(0)

        yield* step(() => page.getByRole("link", { name: target }).click())
        yield* step(() => page.waitForURL(/\/_admin\/users\/[0-9a-f-]{36}$/))
        expect(yield* step(() => page.getByRole("heading", { level: 1 }).textContent())).toBe(target)
        expect(yield* step(() => page.locator("section", { hasText: "Sessions" }).first().locator("tbody tr").count())).toBe(1)
        yield* shoot(page, "user")

        yield* step(() => page.getByLabel("Duration").fill("48h"))
        yield* step(() => page.getByRole("button", { name: "Ban", exact: true }).click())
        yield* step(() => page.waitForURL(/\?done=banned$/))
        expect(yield* step(() => page.getByRole("status").textContent())).toContain("The user is banned")
        expect(yield* step(() => page.locator(".badge.bad", { hasText: "banned" }).count())).toBe(1)
        expect(yield* step(() => page.getByRole("button", { name: "Lift the ban" }).count())).toBe(1)

        yield* step(() => page.getByRole("link", { name: "Audit log" }).click())
        yield* step(() => page.waitForURL(`${http}/_admin/audit`))
        const row = page.locator("tbody tr", { hasText: "user_modified" }).filter({ hasText: target })
        expect(yield* step(() => row.count())).toBe(1)
        expect(yield* step(() => row.textContent())).toContain("service_role")
        yield* shoot(page, "audit")

        yield* step(() => page.getByRole("link", { name: "IAM" }).click())
        yield* step(() => page.waitForURL(`${http}/_admin/iam`))
        const editorRow = page.locator("tbody tr", { hasText: "editor" })
        expect(yield* step(() => editorRow.textContent())).toContain("product.update")
        yield* shoot(page, "iam")

        // The ban is the admin API's: the user cannot sign in.
        expect((yield* raw(http, "/token?grant_type=password", { body: { email: target, password: PASSWORD } })).status).toBe(400)
        yield* step(() => page.getByRole("button", { name: "Sign out" }).click())
        yield* step(() => page.waitForURL(`${http}/_admin`))
        yield* step(() => page.goto(`${http}/_admin/users`))
        expect(page.url()).toBe(`${http}/_admin`)
        expect(problems).toEqual([])
        yield* step(() => page.close())
      }))
  })
}
