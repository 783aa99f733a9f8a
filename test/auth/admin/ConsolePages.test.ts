import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  auditPage,
  type Chrome,
  iamPage,
  isNotice,
  messagePage,
  signInPage,
  userPage,
  usersPage
} from "../../../src/auth/admin/console/ConsolePages.js"
import { User } from "../../../src/auth/contract/User.js"

const NOW = new Date("2026-11-27T06:00:00Z")
const CSRF = "Zm9ybS10b2tlbi1mb3ItdGhpcy1zZXNzaW9uLW9ubHk"
const chrome: Chrome = { csrf: CSRF, role: "service_role" }
const EVIL = `"><script>alert(1)</script><img src=x onerror=alert(2)>'`

const user = (overrides: Partial<ConstructorParameters<typeof User>[0]> = {}) =>
  new User({
    id: "3b241101-e2bb-4255-8caf-4136c566a962",
    aud: "authenticated",
    role: "authenticated",
    email: "ada@example.com",
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: {},
    identities: [],
    created_at: "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    is_anonymous: false,
    ...overrides
  })

const session = {
  id: "9f0c0d1e-0000-4000-8000-000000000001",
  created_at: new Date("2026-11-26T10:00:00Z"),
  updated_at: new Date("2026-11-26T11:00:00Z"),
  refreshed_at: new Date("2026-11-26T11:00:00Z"),
  not_after: null,
  user_agent: EVIL,
  ip: "203.0.113.9",
  aal: "aal1"
}

const entry = (payload: Record<string, unknown>) => ({
  id: "0190c3a0-0000-7000-8000-000000000001",
  payload,
  created_at: new Date("2026-11-27T05:00:00Z"),
  ip_address: "198.51.100.7"
})

const everyPage = (): ReadonlyArray<readonly [string, string]> => [
  ["sign-in", signInPage({ problem: EVIL })],
  ["users", usersPage({ chrome, filter: EVIL, page: 1, perPage: 25, total: 1, users: [user({ email: `${EVIL}@example.com` })] }, NOW)],
  ["user", userPage({ chrome, user: user({ user_metadata: { full_name: EVIL } }), sessions: [session], problem: EVIL }, NOW)],
  ["audit", auditPage({
    chrome, field: "action", value: EVIL, page: 1, perPage: 25, total: 1,
    entries: [entry({ action: EVIL, actor_username: EVIL, traits: { user_id: EVIL, user_email: EVIL } })]
  })],
  ["iam", iamPage({ chrome, directory: { roles: [{ name: EVIL, description: EVIL, permissions: [{ name: EVIL, description: null, resource: EVIL, action: "read" }] }], permissions: [] } })],
  ["message", messagePage({ chrome, title: EVIL, message: EVIL })]
]

/** The forms of a page, each as its opening tag and its content. */
const formsOf = (html: string) =>
  [...html.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)].map((m) => ({ attributes: m[1]!, body: m[2]! }))

describe("the console's pages", () => {
  it.each(everyPage())("%s: no script, no inline style, one style sheet of the console's own, sized for a phone", (_name, html) => {
    expect(html).not.toMatch(/<script/i)
    expect(html).not.toMatch(/\sstyle=|<style/i)
    const tags = [...html.matchAll(/<[a-z][^>]*>/gi)].map((m) => m[0])
    // Attribute names only: a value (escaped) may say anything.
    expect(tags.filter((tag) => /\son[a-z]+=/i.test(tag.replace(/"[^"]*"/g, "\"\"")))).toEqual([])
    expect(html).toContain(`<meta name="viewport" content="width=device-width,initial-scale=1">`)
    expect([...html.matchAll(/<link [^>]*>/g)].map((m) => m[0])).toEqual([`<link rel="stylesheet" href="/_admin/console.css">`])
    expect(html).not.toMatch(/https?:\/\//)
  })

  it.each(everyPage())("%s: what came from users and the log is text, never markup", (_name, html) => {
    expect(html).not.toContain("<script>alert(1)</script>")
    expect(html).not.toContain("<img")
    expect(html).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;")
  })

  it.prop("any text a user wrote reaches the page escaped", [FastCheck.string({ unit: "binary", maxLength: 40 })], ([written]) => {
    const html = userPage({ chrome, user: user({ email: written, phone: written, user_metadata: { note: written } }), sessions: [] }, NOW)
    const outside = html.replace(/<[^>]*>/g, "")
    expect(outside).not.toMatch(/[<>]/)
  })

  it.each(everyPage().filter(([name]) => name !== "sign-in"))("%s: every POST form carries the session's form token; no GET form does", (_name, html) => {
    const forms = formsOf(html)
    expect(forms.length).toBeGreaterThan(0)
    for (const form of forms) {
      const post = /method="post"/.test(form.attributes)
      expect(form.body.includes(`<input type="hidden" name="csrf" value="${CSRF}">`), form.attributes).toBe(post)
      if (post) expect(form.attributes).toMatch(/action="\/_admin\//)
    }
  })

  it("the user page's actions are POST forms to the user's own paths, delete needs a tick", () => {
    const html = userPage({ chrome, user: user({ banned_until: "2026-12-01T00:00:00Z" }), sessions: [] }, NOW)
    const actions = formsOf(html).map((form) => /action="([^"]+)"/.exec(form.attributes)![1]).filter((action) => action!.includes("/users/"))
    expect(actions).toEqual(["ban", "unban", "end-sessions", "send-recovery", "delete"].map((a) => `/_admin/users/3b241101-e2bb-4255-8caf-4136c566a962/${a}`))
    expect(html).toMatch(/name="confirm" value="yes" required/)
    expect(html).toContain(`<span class="badge bad">banned</span>`)
  })

  it("a user without an email address is offered no recovery mail; a deleted user no action", () => {
    expect(userPage({ chrome, user: user({ email: "", phone: "+15550001111" }), sessions: [] }, NOW)).not.toContain("/send-recovery")
    expect(formsOf(userPage({ chrome, user: user({ deleted_at: "2026-11-20T00:00:00Z" }), sessions: [] }, NOW))
      .filter((form) => form.attributes.includes("/users/"))).toEqual([])
  })

  it("the sign-in page posts the key to the console and keeps it out of autofill and the URL", () => {
    const html = signInPage({})
    const forms = formsOf(html)
    expect(forms).toHaveLength(1)
    expect(forms[0]!.attributes).toBe(` method="post" action="/_admin/sign-in"`)
    expect(forms[0]!.body).toMatch(/<input id="key" name="key" type="password" autocomplete="off"/)
    expect(html).not.toContain("<header>")
  })

  it("the sessions table shows what the sessions table holds", () => {
    const html = userPage({ chrome, user: user(), sessions: [session] }, NOW)
    for (const shown of [session.id, "2026-11-26 10:00:00", "2026-11-26 11:00:00", "203.0.113.9", "aal1"]) expect(html).toContain(shown)
  })

  it("a notice is one of the fixed texts; anything else in the query is none", () => {
    expect(isNotice("banned")).toBe(true)
    expect(isNotice("toString")).toBe(false)
    expect(isNotice(EVIL)).toBe(false)
    expect(userPage({ chrome, user: user(), sessions: [], notice: "banned" }, NOW)).toContain("The user is banned")
  })

  it("the IAM page says when IAM is not served", () => {
    expect(iamPage({ chrome, directory: undefined })).toContain("The IAM service is not served by this server")
  })

  it("pages link to the next and previous page with the filter kept, encoded", () => {
    const html = usersPage({ chrome, filter: "a&b c", page: 2, perPage: 25, total: 80, users: [] }, NOW)
    expect(html).toContain(`href="/_admin/users?filter=a%26b+c&amp;page=1"`)
    expect(html).toContain(`href="/_admin/users?filter=a%26b+c&amp;page=3"`)
    expect(html).toContain("Page 2 of 4")
  })
})
