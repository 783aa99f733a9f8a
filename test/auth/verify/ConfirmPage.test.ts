import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { BUILT_IN_TEXTS } from "../../../src/auth/messages/BuiltInTexts.js"
import { MESSAGE_LOCALES } from "../../../src/domain/MessageLocale.js"
import { confirmFormAction, confirmPage, confirmPageCsp, redirectSource } from "../../../src/auth/verify/ConfirmPage.js"

describe("confirmFormAction", () => {
  it.each([
    ["/verify", "/verify/confirm"],
    ["/auth/v1/verify", "/auth/v1/verify/confirm"],
    ["/auth/v1/verify/", "/auth/v1/verify/confirm"],
    ["/gateway/auth/verify", "/gateway/auth/verify/confirm"]
  ])("from a page at %j the button posts to %j", (path, posted) => {
    expect(new URL(confirmFormAction(path), `https://auth.example.com${path}?token=t`).pathname).toBe(posted)
  })
})

describe("redirectSource", () => {
  it.each([
    ["http://localhost:3000/welcome#x", "http://localhost:3000"],
    ["https://app.example.com", "https://app.example.com"],
    ["com.example.app://login-callback", "com.example.app:"],
    ["not a url", undefined]
  ])("%j may be gone on to as %j", (target, source) => {
    expect(redirectSource(target)).toBe(source)
  })

  it.prop("whatever the target, the CSP stays one policy: no separator or quote from it gets in", [FastCheck.string()], ([target]) => {
    const csp = confirmPageCsp(target)
    expect(csp.split("; ")).toHaveLength(5)
    expect(csp.split("; ")[2]).toMatch(/^form-action 'self'( [A-Za-z0-9+.:/\-[\]]+)?$/)
  })
})

describe("confirmPage", () => {
  it.prop("carries any field values back escaped: no markup from them, and they read back as given", [
    FastCheck.string(),
    FastCheck.string(),
    FastCheck.string()
  ], ([token, type, redirectTo]) => {
    const html = confirmPage(BUILT_IN_TEXTS.en.confirmPage, "en", "verify/confirm", { token, type, redirect_to: redirectTo })
    const values = [...html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]])
    const unescape = (text: string) =>
      text.replaceAll("&quot;", "\"").replaceAll("&#39;", "'").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&")
    expect(values.map(([name, value]) => [name, unescape(value!)])).toStrictEqual([["token", token], ["type", type], ["redirect_to", redirectTo]])
    expect(html.match(/<[a-z!/]/gi)!.length).toBe(confirmPage(BUILT_IN_TEXTS.en.confirmPage, "en", "verify/confirm", {
      token: "",
      type: "",
      redirect_to: ""
    }).match(/<[a-z!/]/gi)!.length)
  })
})

describe("every built-in locale", () => {
  const others = MESSAGE_LOCALES.filter((locale) => locale !== "en")

  it("offers English and at least German, French, Spanish and Portuguese", () => {
    expect([...MESSAGE_LOCALES].sort()).toEqual(expect.arrayContaining(["de", "en", "es", "fr", "pt"]))
  })

  it.each(MESSAGE_LOCALES)("%s: the confirm page is in its language, script-free, and posts the link back", (locale) => {
    const texts = BUILT_IN_TEXTS[locale].confirmPage
    const html = confirmPage(texts, locale, "verify/confirm", { token: "t0k", type: "signup", redirect_to: undefined })
    expect(html).toContain(`<html lang="${locale}">`)
    for (const text of [texts.title, texts.heading, texts.explanation, texts.button]) expect(text.trim()).not.toBe("")
    expect(html).toContain(`<button type="submit">`)
    expect(html).not.toMatch(/<script|\bon[a-z]+=|javascript:/i)
    expect(html).toContain(`<input type="hidden" name="token" value="t0k">`)
  })

  it.each(others)("%s: page, SMS and every mail subject are its own, not English's", (locale) => {
    const ours = BUILT_IN_TEXTS[locale]
    const english = BUILT_IN_TEXTS.en
    expect(ours.confirmPage.heading).not.toBe(english.confirmPage.heading)
    expect(ours.confirmPage.button).not.toBe(english.confirmPage.button)
    expect(ours.sms).not.toBe(english.sms)
    expect(ours.sms).toContain("{{ .Code }}")
    for (const kind of Object.keys(english.mail) as Array<keyof typeof english.mail>) {
      expect(ours.mail[kind].subject, kind).not.toBe(english.mail[kind].subject)
    }
  })
})
