import { escapeHtml } from "../../../platform/http/Html.js"
import type { User } from "../../contract/User.js"
import type { SessionSummary } from "../../sessions/SessionsRepo.js"
import type { AuditLogEntry } from "../../users/AuditLogRepo.js"
import { CONSOLE_PATH } from "./ConsoleHttp.js"
import type { IamDirectory, IamPermissionListing } from "./ConsoleIam.js"

/*
 * The console's pages, as pure functions of what they show: server-rendered HTML with no script at all. Every value
 * that did not come from this file goes through `text` (element text and quoted attributes) or `link` (a path with
 * its query), so nothing a user wrote into their metadata, or an audit entry carries, is ever markup.
 */

const text = (value: unknown): string => escapeHtml(value === null || value === undefined ? "" : String(value))

/** A console path with its query, percent-encoded and then escaped for the attribute. */
const link = (path: string, query: Readonly<Record<string, string | number | undefined>> = {}): string => {
  const pairs = Object.entries(query).filter(([, value]) => value !== undefined && value !== "")
  const search = new URLSearchParams(pairs.map(([key, value]): [string, string] => [key, String(value)])).toString()
  return escapeHtml(`${CONSOLE_PATH}${path}${search === "" ? "" : `?${search}`}`)
}

const userPath = (id: string): string => `/users/${encodeURIComponent(id)}`

/** An instant as UTC to the second, in a <time> element; a dash for none. */
const when = (value: Date | string | null | undefined): string => {
  if (value === null || value === undefined || value === "") return `<span class="muted">—</span>`
  const date = value instanceof Date ? value : new Date(value)
  if (Number.isNaN(date.getTime())) return text(value)
  const iso = date.toISOString()
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)}</time>`
}

const orDash = (value: unknown): string =>
  value === null || value === undefined || value === "" ? `<span class="muted">—</span>` : text(value)

const json = (value: unknown): string => `<pre>${text(JSON.stringify(value ?? {}, null, 2))}</pre>`

/** The form token every state-changing form carries (checked against the session by the server). */
const csrfField = (csrf: string): string => `<input type="hidden" name="csrf" value="${text(csrf)}">`

/** What every page but sign-in shows around its content: the nav, who is signed in, and the sign-out button. */
export interface Chrome {
  readonly csrf: string
  readonly role: string
  readonly current?: "users" | "audit" | "iam" | undefined
}

const navLink = (chrome: Chrome, page: NonNullable<Chrome["current"]>, label: string): string =>
  `<a href="${link(`/${page}`)}"${chrome.current === page ? ` aria-current="page"` : ""}>${label}</a>`

const layout = (title: string, chrome: Chrome | undefined, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
  `<meta name="viewport" content="width=device-width,initial-scale=1">` +
  `<meta name="referrer" content="no-referrer">` +
  `<title>${text(title)} · Gatehouse admin</title><link rel="stylesheet" href="${CONSOLE_PATH}/console.css"></head><body>` +
  (chrome === undefined
    ? ""
    : `<header><nav><span class="brand">Gatehouse admin</span>` +
      navLink(chrome, "users", "Users") + navLink(chrome, "audit", "Audit log") + navLink(chrome, "iam", "IAM") +
      `<span class="who">as ${text(chrome.role)}</span>` +
      `<form method="post" action="${CONSOLE_PATH}/sign-out">${csrfField(chrome.csrf)}<button class="quiet" type="submit">Sign out</button></form>` +
      `</nav></header>`) +
  `<main>${body}</main></body></html>`

// ---- sign-in ----

export interface SignInPage {
  /** Why the last attempt was refused, in the server's words; none on a first visit. */
  readonly problem?: string | undefined
}

export const signInPage = (page: SignInPage): string =>
  layout("Sign in", undefined,
    `<div class="signin card"><h1>Gatehouse admin</h1>` +
      (page.problem === undefined ? "" : `<div class="problem" role="alert">${text(page.problem)}</div>`) +
      `<form method="post" action="${CONSOLE_PATH}/sign-in">` +
      `<label for="key">service_role key</label>` +
      `<input id="key" name="key" type="password" autocomplete="off" autocapitalize="off" spellcheck="false" required>` +
      `<button type="submit">Sign in</button></form>` +
      `<p class="muted">The key is checked as the admin API checks it and is not kept: the session is a signed cookie ` +
      `that ends when you sign out, close the browser, or after the configured time.</p></div>`)

// ---- users ----

export interface UsersPage {
  readonly chrome: Chrome
  readonly filter: string
  readonly page: number
  readonly perPage: number
  readonly total: number
  readonly users: ReadonlyArray<User>
}

const isBanned = (user: Pick<User, "banned_until">, now: Date): boolean =>
  user.banned_until !== undefined && new Date(user.banned_until).getTime() > now.getTime()

const statusBadges = (user: User, now: Date): string =>
  [
    user.deleted_at !== undefined ? `<span class="badge bad">deleted</span>` : "",
    isBanned(user, now) ? `<span class="badge bad">banned</span>` : "",
    user.is_anonymous ? `<span class="badge">anonymous</span>` : "",
    user.email !== "" && user.email_confirmed_at === undefined ? `<span class="badge">unconfirmed</span>` : ""
  ].filter((badge) => badge !== "").join(" ")

const pager = (path: string, query: Readonly<Record<string, string>>, page: number, perPage: number, total: number): string => {
  const last = Math.max(1, Math.ceil(total / perPage))
  return `<nav class="pager" aria-label="Pages">` +
    (page > 1 ? `<a rel="prev" href="${link(path, { ...query, page: page - 1 })}">← Newer</a>` : "") +
    `<span class="muted">Page ${page} of ${last} · ${total} in all</span>` +
    (page < last ? `<a rel="next" href="${link(path, { ...query, page: page + 1 })}">Older →</a>` : "") +
    `</nav>`
}

export const usersPage = (page: UsersPage, now: Date): string =>
  layout("Users", page.chrome,
    `<h1>Users</h1>` +
      `<form class="card row" method="get" action="${CONSOLE_PATH}/users" role="search">` +
      `<div class="grow"><label for="filter">Email, phone or name contains</label>` +
      `<input id="filter" name="filter" type="search" value="${text(page.filter)}" autocapitalize="off"></div>` +
      `<button type="submit">Filter</button></form>` +
      `<div class="card scroll"><table><thead><tr><th>Email</th><th>Phone</th><th>Created</th><th>Last sign-in</th><th>Status</th></tr></thead><tbody>` +
      (page.users.length === 0
        ? `<tr><td colspan="5" class="muted">No user${page.filter === "" ? "s yet" : " matches this filter"}.</td></tr>`
        : page.users.map((user) =>
          `<tr><td><a href="${link(userPath(user.id))}">${user.email !== "" ? text(user.email) : `<span class="mono">${text(user.id)}</span>`}</a></td>` +
          `<td>${orDash(user.phone)}</td><td>${when(user.created_at)}</td><td>${when(user.last_sign_in_at)}</td>` +
          `<td>${statusBadges(user, now)}</td></tr>`
        ).join("")) +
      `</tbody></table>` +
      pager("/users", { filter: page.filter }, page.page, page.perPage, page.total) +
      `</div>`)

// ---- one user ----

/** What an action's redirect says it did: a fixed text per key, so the query can never put words on the page. */
export const NOTICES = {
  banned: "The user is banned and their sessions are ended.",
  unbanned: "The ban is lifted.",
  "sessions-ended": "Every session of the user is ended.",
  "recovery-sent": "A password recovery mail is on its way."
} as const

export type Notice = keyof typeof NOTICES

export const isNotice = (value: string | undefined): value is Notice => value !== undefined && Object.hasOwn(NOTICES, value)

export interface UserPage {
  readonly chrome: Chrome
  readonly user: User
  readonly sessions: ReadonlyArray<SessionSummary>
  readonly notice?: Notice | undefined
  /** Why the last action was refused, in the server's words. */
  readonly problem?: string | undefined
}

/** The ban lengths offered (the admin API's Go durations); any other duration may be typed. */
const BAN_CHOICES = ["1h", "24h", "168h", "720h", "876000h"]

const actionForm = (csrf: string, id: string, action: string, inner: string): string =>
  `<form method="post" action="${link(`${userPath(id)}/${action}`)}">${csrfField(csrf)}${inner}</form>`

const userActions = (page: UserPage, now: Date): string => {
  const { chrome: { csrf }, user } = page
  const banned = isBanned(user, now)
  return `<h2>Actions</h2><div class="actions">` +
    `<section class="card"><h2>Ban</h2><p>For a Go duration (<code>24h</code>, <code>1h30m</code>), as the admin API's ` +
    `<code>ban_duration</code>; a ban also ends the user's sessions.</p>` +
    actionForm(csrf, user.id, "ban",
      `<div class="row"><div class="grow"><label for="duration">Duration</label>` +
      `<input id="duration" name="duration" value="24h" list="durations" required autocapitalize="off" spellcheck="false">` +
      `<datalist id="durations">${BAN_CHOICES.map((choice) => `<option value="${choice}">`).join("")}</datalist></div>` +
      `<button class="danger" type="submit">Ban</button></div>`) +
    (banned ? actionForm(csrf, user.id, "unban", `<p>Banned until ${when(user.banned_until)}.</p><button type="submit">Lift the ban</button>`) : "") +
    `</section>` +
    `<section class="card"><h2>Sessions</h2><p>Signs the user out everywhere: every session and its refresh tokens end.</p>` +
    actionForm(csrf, user.id, "end-sessions", `<button class="danger" type="submit">End all sessions</button>`) +
    `</section>` +
    `<section class="card"><h2>Password recovery</h2>` +
    (user.email === ""
      ? `<p>The user has no email address to send a recovery mail to.</p>`
      : `<p>Mails ${text(user.email)} a recovery link, as <code>POST /recover</code> does.</p>` +
        actionForm(csrf, user.id, "send-recovery", `<button type="submit">Send recovery mail</button>`)) +
    `</section>` +
    `<section class="card"><h2>Delete</h2><p>Deletes the user, their identities and sessions, as the admin API's ` +
    `<code>DELETE /admin/users/{id}</code>.</p>` +
    actionForm(csrf, user.id, "delete",
      `<label class="check"><input type="checkbox" name="soft" value="yes"> Keep the row (soft delete)</label>` +
      `<label class="check"><input type="checkbox" name="confirm" value="yes" required> I mean it</label>` +
      `<button class="danger" type="submit">Delete user</button>`) +
    `</section></div>`
}

const table = (headings: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, empty: string): string =>
  `<div class="scroll"><table><thead><tr>${headings.map((h) => `<th>${h}</th>`).join("")}</tr></thead><tbody>` +
  (rows.length === 0
    ? `<tr><td colspan="${headings.length}" class="muted">${empty}</td></tr>`
    : rows.map((cells) => `<tr>${cells.map((cell) => `<td>${cell}</td>`).join("")}</tr>`).join("")) +
  `</tbody></table></div>`

export const userPage = (page: UserPage, now: Date): string => {
  const { user } = page
  const facts: ReadonlyArray<readonly [string, string]> = [
    ["ID", `<span class="mono">${text(user.id)}</span>`],
    ["Email", orDash(user.email)],
    ["Email confirmed", when(user.email_confirmed_at)],
    ["Phone", orDash(user.phone)],
    ["Phone confirmed", when(user.phone_confirmed_at)],
    ["Role", orDash(user.role)],
    ["Audience", orDash(user.aud)],
    ["Created", when(user.created_at)],
    ["Last sign-in", when(user.last_sign_in_at)],
    ["Banned until", when(user.banned_until)],
    ["Status", statusBadges(user, now) || `<span class="badge good">active</span>`]
  ]
  return layout(user.email !== "" ? user.email : user.id, { ...page.chrome, current: "users" },
    `<h1>${user.email !== "" ? text(user.email) : text(user.phone !== "" ? user.phone : user.id)}</h1>` +
      (page.notice === undefined ? "" : `<div class="notice" role="status">${NOTICES[page.notice]}</div>`) +
      (page.problem === undefined ? "" : `<div class="problem" role="alert">${text(page.problem)}</div>`) +
      `<section class="card"><h2>Profile</h2><dl class="facts">${facts.map(([term, value]) => `<dt>${term}</dt><dd>${value}</dd>`).join("")}</dl></section>` +
      `<section class="card"><h2>User metadata</h2>${json(user.user_metadata)}</section>` +
      `<section class="card"><h2>App metadata</h2>${json(user.app_metadata)}</section>` +
      `<section class="card"><h2>Identities</h2>` +
      table(["Provider", "Provider id", "Email", "Created", "Last sign-in"], user.identities.map((identity) => [
        text(identity.provider), `<span class="mono">${text(identity.id)}</span>`, orDash(identity.email),
        when(identity.created_at), when(identity.last_sign_in_at)
      ]), "No identity.") + `</section>` +
      `<section class="card"><h2>MFA factors</h2>` +
      table(["Type", "Name", "Status", "Created", "Last challenged"], (user.factors ?? []).map((factor) => [
        text(factor.factor_type), orDash(factor.friendly_name), text(factor.status), when(factor.created_at), when(factor.last_challenged_at)
      ]), "No factor.") + `</section>` +
      `<section class="card"><h2>Sessions</h2>` +
      table(["Session", "Created", "Refreshed", "User agent", "IP", "AAL"], page.sessions.map((session) => [
        `<span class="mono">${text(session.id)}</span>`, when(session.created_at), when(session.refreshed_at),
        orDash(session.user_agent), orDash(session.ip), orDash(session.aal)
      ]), "No session.") + `</section>` +
      (user.deleted_at !== undefined ? "" : userActions(page, now)))
}

// ---- audit log ----

export interface AuditPage {
  readonly chrome: Chrome
  readonly entries: ReadonlyArray<AuditLogEntry>
  readonly page: number
  readonly perPage: number
  readonly total: number
  readonly field: "author" | "action" | "type"
  readonly value: string
  readonly problem?: string | undefined
}

const trait = (entry: AuditLogEntry, key: string): unknown => {
  const traits = entry.payload["traits"]
  return typeof traits === "object" && traits !== null ? (traits as Record<string, unknown>)[key] : undefined
}

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/** The user an entry is about: the traits' user (an admin's entries), else the acting user (a user's own). */
const subjectOf = (entry: AuditLogEntry): string => {
  const id = trait(entry, "user_id")
  const email = trait(entry, "user_email")
  if (typeof id === "string" && id !== "") {
    return `<a href="${link(userPath(id))}">${typeof email === "string" && email !== "" ? text(email) : `<span class="mono">${text(id)}</span>`}</a>`
  }
  const actor = entry.payload["actor_id"]
  return typeof actor === "string" && actor !== "" && actor !== NIL_UUID
    ? `<a href="${link(userPath(actor))}">the same user</a>`
    : `<span class="muted">—</span>`
}

export const auditPage = (page: AuditPage): string =>
  layout("Audit log", page.chrome,
    `<h1>Audit log</h1>` +
      (page.problem === undefined ? "" : `<div class="problem" role="alert">${text(page.problem)}</div>`) +
      `<form class="card row" method="get" action="${CONSOLE_PATH}/audit" role="search">` +
      `<div><label for="field">Field</label><select id="field" name="field">` +
      (["action", "author", "type"] as const).map((field) =>
        `<option value="${field}"${page.field === field ? " selected" : ""}>${field}</option>`).join("") +
      `</select></div>` +
      `<div class="grow"><label for="value">contains</label><input id="value" name="value" type="search" value="${text(page.value)}" autocapitalize="off"></div>` +
      `<button type="submit">Filter</button></form>` +
      `<div class="card scroll"><table><thead><tr><th>When</th><th>Action</th><th>Actor</th><th>About</th><th>IP</th></tr></thead><tbody>` +
      (page.entries.length === 0
        ? `<tr><td colspan="5" class="muted">No entry.</td></tr>`
        : page.entries.map((entry) =>
          `<tr><td>${when(entry.created_at)}</td><td><code>${text(entry.payload["action"])}</code></td>` +
          `<td>${orDash(entry.payload["actor_username"])}</td><td>${subjectOf(entry)}</td><td>${orDash(entry.ip_address)}</td></tr>`
        ).join("")) +
      `</tbody></table>` +
      pager("/audit", page.value === "" ? {} : { field: page.field, value: page.value }, page.page, page.perPage, page.total) +
      `</div>`)

// ---- IAM ----

export interface IamPage {
  readonly chrome: Chrome
  /** None: the IAM service is not served by this process. */
  readonly directory: IamDirectory | undefined
}

const permissionRows = (permissions: ReadonlyArray<IamPermissionListing>) =>
  permissions.map((permission) => [
    text(permission.name), `<code>${text(permission.resource)}</code>`, `<code>${text(permission.action)}</code>`, orDash(permission.description)
  ])

export const iamPage = (page: IamPage): string =>
  layout("IAM", page.chrome,
    `<h1>IAM roles and permissions</h1>` +
      (page.directory === undefined
        ? `<div class="card"><p>The IAM service is not served by this server (<code>AUTH_IAM_ENABLED</code> is off), so there ` +
          `are no roles or permissions to show here.</p></div>`
        : `<section class="card"><h2>Roles</h2>` +
          table(["Role", "Description", "Permissions"], page.directory.roles.map((role) => [
            text(role.name), orDash(role.description),
            role.permissions.length === 0 ? `<span class="muted">none</span>` : role.permissions.map((p) => `<code>${text(p.name)}</code>`).join(" ")
          ]), "No role.") + `</section>` +
          `<section class="card"><h2>Permissions</h2>` +
          table(["Permission", "Resource", "Action", "Description"], permissionRows(page.directory.permissions), "No permission.") +
          `</section>`))

// ---- anything else ----

export interface MessagePage {
  /** Without chrome (not signed in), the page links to sign-in. */
  readonly chrome?: Chrome | undefined
  readonly title: string
  readonly message: string
}

export const messagePage = (page: MessagePage): string =>
  layout(page.title, page.chrome,
    `<div class="card"><h1>${text(page.title)}</h1><p>${text(page.message)}</p>` +
      `<p><a href="${link(page.chrome === undefined ? "" : "/users")}">${page.chrome === undefined ? "Sign in" : "Back to the users"}</a></p></div>`)
