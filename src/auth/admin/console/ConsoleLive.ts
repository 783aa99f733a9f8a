import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as UrlParams from "@effect/platform/UrlParams"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../../config/PlatformConfig.js"
import type { HttpProduct } from "../../../platform/http/HttpEdge.js"
import type { AuthError } from "../../domain/AuthError.js"
import { Console, type AuditField, type ConsoleVisit } from "./Console.js"
import { CONSOLE_PATH, ConsoleHttp, consoleOwns } from "./ConsoleHttp.js"
import {
  auditPage,
  type Chrome,
  iamPage,
  isNotice,
  messagePage,
  type Notice,
  signInPage,
  userPage,
  usersPage
} from "./ConsolePages.js"
import { CONSOLE_STYLE } from "./ConsoleStyle.js"

/** The session cookie: HttpOnly, SameSite=Strict, only ever sent to the console's own paths. */
export const CONSOLE_COOKIE = "gatehouse-admin"

/**
 * No script may run, nothing may be loaded but the console's own style sheet, forms go only to this origin, and no
 * other site may frame a page (clickjacking an action button).
 */
export const CONSOLE_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
}

const html = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS })

const seeOther = (path: string) => HttpServerResponse.empty({ status: 303, headers: { ...PAGE_HEADERS, location: `${CONSOLE_PATH}${path}` } })

const notAllowed = (allow: string) =>
  HttpServerResponse.setHeader(html(messagePage({ title: "Method not allowed", message: `This page answers ${allow} only.` }), 405), "allow", allow)

const AUDIT_FIELDS: ReadonlyArray<AuditField> = ["action", "author", "type"]

type FixedPage = "home" | "style" | "signIn" | "signOut" | "users" | "audit" | "iam"

type Route =
  | { readonly [P in FixedPage]: { readonly page: P } }[FixedPage]
  | { readonly page: "user"; readonly id: string }
  | { readonly page: "action"; readonly id: string; readonly action: UserAction }
  | { readonly page: "unknown" }

const USER_ACTIONS = ["ban", "unban", "delete", "end-sessions", "send-recovery"] as const
type UserAction = (typeof USER_ACTIONS)[number]
const isUserAction = (value: string): value is UserAction => (USER_ACTIONS as ReadonlyArray<string>).includes(value)

const FIXED: Readonly<Record<string, FixedPage>> = {
  "": "home",
  "/": "home",
  "/console.css": "style",
  "/sign-in": "signIn",
  "/sign-out": "signOut",
  "/users": "users",
  "/audit": "audit",
  "/iam": "iam"
}

/** The console's route for a path under /_admin (the part after it). */
const routeOf = (rest: string): Route => {
  const fixed = FIXED[rest]
  if (fixed !== undefined) return { page: fixed } as Route
  const parts = rest.split("/")
  if (parts[1] !== "users" || parts[2] === undefined || parts[2] === "" || parts.length > 4) return { page: "unknown" }
  let id: string
  try {
    id = decodeURIComponent(parts[2])
  } catch {
    return { page: "unknown" }
  }
  if (parts.length === 3) return { page: "user", id }
  return isUserAction(parts[3]!) ? { page: "action", id, action: parts[3] } : { page: "unknown" }
}

const firstHeader = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined =>
  request.headers[name]?.split(",", 1)[0]?.trim().toLowerCase()

/**
 * A form posted by a page of another site, as browsers mark it (Sec-Fetch-Site). SameSite=Strict already keeps the
 * cookie off such a request, and the form token is checked besides; this also covers the sign-in form, which has
 * no session to hold a token yet. A client that sends no such header is judged by the token alone.
 */
const crossSite = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const site = firstHeader(request, "sec-fetch-site")
  return site !== undefined && site !== "same-origin" && site !== "none"
}

/**
 * The admin console at /_admin (issue 31): server-rendered pages, no script, signed in with an admin key. Every
 * GET only reads; every change is a POST form that carries the session's form token. Built only when
 * ADMIN_CONSOLE_ENABLED is on; off, nothing owns /_admin and the auth API answers its 404.
 */
export const ConsoleLive = Layer.effect(
  ConsoleHttp,
  Effect.gen(function*() {
    const console = yield* Console
    const platform = yield* PlatformConfig
    const httpsSite = platform.api.externalUrl.toLowerCase().startsWith("https:")
    const secureFor = (request: HttpServerRequest.HttpServerRequest) => httpsSite || firstHeader(request, "x-forwarded-proto") === "https"

    const cookieOptions = (request: HttpServerRequest.HttpServerRequest, maxAge: Duration.Duration) => ({
      httpOnly: true,
      secure: secureFor(request),
      sameSite: "strict" as const,
      path: CONSOLE_PATH,
      maxAge
    })

    const chromeOf = (visit: ConsoleVisit, current?: Chrome["current"]): Chrome => ({ csrf: console.formTokenOf(visit), role: visit.session.role, current })

    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const readForm = (request: HttpServerRequest.HttpServerRequest) =>
      (firstHeader(request, "content-type") ?? "").startsWith("application/x-www-form-urlencoded")
        ? Effect.option(request.urlParamsBody)
        : Effect.succeed(Option.none<UrlParams.UrlParams>())

    const field = (form: UrlParams.UrlParams, name: string): string | undefined => Option.getOrUndefined(UrlParams.getFirst(form, name))

    const signIn = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (crossSite(request)) return html(signInPage({ problem: "This sign-in did not come from this console's own page." }), 403)
        const form = yield* readForm(request)
        if (Option.isNone(form)) return html(signInPage({ problem: "The sign-in form could not be read." }), 400)
        return yield* console.signIn(field(form.value, "key") ?? "").pipe(
          Effect.flatMap((visit) =>
            Effect.map(now, (at) =>
              HttpServerResponse.unsafeSetCookie(seeOther("/users"), CONSOLE_COOKIE, visit.cookie,
                cookieOptions(request, Duration.seconds(visit.session.expiresAt - Math.floor(at.getTime() / 1000)))))),
          Effect.catchAll((refused: AuthError) =>
            Effect.succeed(html(signInPage({ problem: `That key was not accepted: ${refused.message}` }), 401)))
        )
      })

    const userView = (visit: ConsoleVisit, id: string, notice: Notice | undefined, problem?: AuthError) =>
      Effect.gen(function*() {
        const found = yield* Effect.either(console.user(id))
        if (found._tag === "Left") {
          return html(messagePage({ chrome: chromeOf(visit, "users"), title: "No such user", message: found.left.message }), found.left.status === 404 ? 404 : found.left.status)
        }
        const body = userPage({ chrome: chromeOf(visit, "users"), ...found.right, notice, problem: problem?.message }, yield* now)
        return html(body, problem === undefined ? 200 : problem.status)
      })

    /** A user action, then back to the user's page with what it did (or, once deleted, to the list). */
    const act = (visit: ConsoleVisit, id: string, action: UserAction, form: UrlParams.UrlParams) => {
      const done = (notice: Notice) => (effect: Effect.Effect<void, AuthError>) =>
        Effect.as(effect, seeOther(`/users/${encodeURIComponent(id)}?done=${notice}`))
      const effect: Effect.Effect<HttpServerResponse.HttpServerResponse, AuthError> = (() => {
        switch (action) {
          case "ban":
            return done("banned")(console.ban(visit, id, field(form, "duration") ?? ""))
          case "unban":
            return done("unbanned")(console.unban(visit, id))
          case "end-sessions":
            return done("sessions-ended")(console.endSessions(visit, id))
          case "send-recovery":
            return done("recovery-sent")(console.sendRecovery(id))
          case "delete":
            return field(form, "confirm") === "yes"
              ? Effect.as(console.remove(visit, id, field(form, "soft") === "yes"), seeOther("/users"))
              : Effect.succeed(html(messagePage({ chrome: chromeOf(visit), title: "Not deleted", message: "Tick “I mean it” to delete a user." }), 400))
        }
      })()
      return Effect.catchAll(effect, (refused) =>
        refused.status === 404
          ? Effect.succeed(html(messagePage({ chrome: chromeOf(visit, "users"), title: "No such user", message: refused.message }), 404))
          : userView(visit, id, undefined, refused))
    }

    const signedIn = (
      request: HttpServerRequest.HttpServerRequest,
      route: Exclude<Route, { readonly page: "home" | "style" | "signIn" | "unknown" }>,
      visit: ConsoleVisit
    ) =>
      Effect.gen(function*() {
        const query = new URL(request.url, "http://console.invalid").searchParams
        const param = (name: string) => query.get(name) ?? undefined
        // PostgreSQL cannot compare text with a NUL in it: a filter holding one is refused here, not by a failed query.
        if ([...query.values()].some((value) => value.includes("\u0000"))) {
          return html(messagePage({ chrome: chromeOf(visit), title: "Not a filter", message: "A filter cannot contain a NUL character." }), 400)
        }
        if (request.method === "POST") {
          if (route.page !== "signOut" && route.page !== "action") return notAllowed("GET, HEAD")
          const target = route
          const form = yield* readForm(request)
          if (crossSite(request) || Option.isNone(form) || !console.formTokenValid(visit, field(form.value, "csrf"))) {
            return html(messagePage({
              chrome: chromeOf(visit),
              title: "Refused",
              message: "This form did not come from this console's own page (its form token is missing or wrong). Nothing was changed."
            }), 403)
          }
          if (target.page === "signOut") {
            return HttpServerResponse.unsafeSetCookie(seeOther(""), CONSOLE_COOKIE, "", cookieOptions(request, Duration.zero))
          }
          return yield* act(visit, target.id, target.action, form.value)
        }
        if (request.method !== "GET" && request.method !== "HEAD") {
          return notAllowed(route.page === "signOut" || route.page === "action" ? "POST" : "GET, HEAD")
        }
        switch (route.page) {
          case "signOut":
          case "action":
            return notAllowed("POST")
          case "users": {
            const filter = (param("filter") ?? "").slice(0, 200)
            const listed = yield* Effect.either(console.listUsers(filter, param("page")))
            if (listed._tag === "Left") return html(messagePage({ chrome: chromeOf(visit, "users"), title: "Users", message: listed.left.message }), 400)
            return html(usersPage({ chrome: chromeOf(visit, "users"), filter, ...listed.right }, yield* now))
          }
          case "user": {
            const done = param("done")
            return yield* userView(visit, route.id, isNotice(done) ? done : undefined)
          }
          case "audit": {
            const requested = param("field")
            const auditField = AUDIT_FIELDS.find((known) => known === requested) ?? "action"
            const value = (param("value") ?? "").slice(0, 200)
            const chrome = chromeOf(visit, "audit")
            const listed = yield* Effect.either(console.auditPage(param("page"), auditField, value))
            return listed._tag === "Left"
              ? html(auditPage({ chrome, entries: [], page: 1, perPage: 1, total: 0, field: auditField, value, problem: listed.left.message }), 400)
              : html(auditPage({ chrome, field: auditField, value, ...listed.right }))
          }
          case "iam":
            return html(iamPage({ chrome: chromeOf(visit, "iam"), directory: yield* console.iamDirectory }))
        }
      })

    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const route = routeOf(request.url.split("?", 1)[0]!.slice(CONSOLE_PATH.length))
      const reading = request.method === "GET" || request.method === "HEAD"
      if (route.page === "style") {
        return reading
          ? HttpServerResponse.text(CONSOLE_STYLE, { contentType: "text/css; charset=utf-8", headers: PAGE_HEADERS })
          : notAllowed("GET, HEAD")
      }
      if (route.page === "signIn") return request.method === "POST" ? yield* signIn(request) : notAllowed("POST")
      if (route.page === "unknown") return html(messagePage({ title: "Not found", message: "The console has no such page." }), 404)
      const visit = yield* console.visit(request.cookies[CONSOLE_COOKIE])
      if (route.page === "home") {
        if (!reading) return notAllowed("GET, HEAD")
        return Option.isSome(visit) ? seeOther("/users") : html(signInPage({}))
      }
      if (Option.isNone(visit)) {
        // A page asked for without a session goes to sign-in; a form posted without one changes nothing.
        return reading
          ? seeOther("")
          : html(messagePage({ title: "Signed out", message: "Your console session has ended or is not valid. Sign in again; nothing was changed." }), 403)
      }
      return yield* signedIn(request, route, visit.value)
    })

    return {
      owns: consoleOwns,
      app,
      refuse: (_request, _requestId, status, _code, message) => html(messagePage({ title: "Refused", message }), status)
    } satisfies HttpProduct
  })
).pipe(Layer.provide(Console.Default))
