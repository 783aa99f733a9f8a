import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { type MailTemplateVariables, renderMailTemplate } from "../../../src/auth/messages/MailTemplate.js"
import { escapeHtml } from "../../../src/platform/http/Html.js"

const NAMES = ["SiteURL", "Email", "ConfirmationURL", "NewEmail", "Token", "TokenHash", "RedirectTo"] as const

const unescapeHtml = (html: string): string =>
  html.replace(/&(lt|gt|quot|#39|amp);/g, (_, entity: string) =>
    ({ lt: "<", gt: ">", quot: "\"", "#39": "'", amp: "&" })[entity]!)

const anyVariables: FastCheck.Arbitrary<MailTemplateVariables> = FastCheck.record(
  Object.fromEntries(NAMES.map((name) => [name, FastCheck.string()])) as Record<(typeof NAMES)[number], FastCheck.Arbitrary<string>>,
  { requiredKeys: [] }
)
const name = FastCheck.constantFrom(...NAMES)
const space = FastCheck.stringMatching(/^[ \t\n]{0,3}$/)
/** Template text with no action in it. */
const plain = FastCheck.string().filter((text) => !text.includes("{{"))

describe("renderMailTemplate", () => {
  it.prop("a template without actions renders as itself", { template: plain, variables: anyVariables }, ({ template, variables }) => {
    expect(renderMailTemplate(template, variables)).toBe(template)
  })

  it.prop("no value can add markup: a template without < renders without <, > or a quote", { parts: FastCheck.array(FastCheck.tuple(plain, name), { maxLength: 5 }), variables: anyVariables }, ({ parts, variables }) => {
    const template = parts.map(([text, n]) => `${text.replace(/[<>"']/g, "")}{{ .${n} }}`).join("")
    expect(renderMailTemplate(template, variables)).not.toMatch(/[<>"']/)
  })

  it.prop("a variable renders as its value, escaped, with any spacing inside the braces", { n: name, value: FastCheck.string(), before: space, after: space }, ({ after, before, n, value }) => {
    const rendered = renderMailTemplate(`<p>{{${before}.${n}${after}}}</p>`, { [n]: value })
    expect(rendered).toBe(`<p>${escapeHtml(value)}</p>`)
    expect(unescapeHtml(rendered.slice(3, -4))).toBe(value)
  })

  it.prop("text around the variables is kept as written", { parts: FastCheck.array(FastCheck.tuple(plain, name), { maxLength: 5 }), tail: plain, variables: anyVariables }, ({ parts, tail, variables }) => {
    const template = parts.map(([text, n]) => `${text}{{ .${n} }}`).join("") + tail
    const expected = parts.map(([text, n]) => text + escapeHtml(variables[n] ?? "")).join("") + tail
    expect(renderMailTemplate(template, variables)).toBe(expected)
  })

  it("an unknown or unset variable renders empty", () => {
    expect(renderMailTemplate("a{{ .Data }}b{{ .Email }}c{{ .constructor }}d", {})).toBe("abcd")
  })

  it("actions other than a variable are left as written", () => {
    const template = "{{ if .Email }}x{{ end }} {{- .Email -}} {{ .Email | html }} {{/* note */}} {{ .Data.name }}"
    expect(renderMailTemplate(template, { Email: "a@example.com" })).toBe(template)
  })

  it("renders GoTrue's documented confirmation template", () => {
    const template = `<h2>Confirm your signup</h2>\n<p><a href="{{ .ConfirmationURL }}">Confirm your mail</a> for {{ .Email }} on {{ .SiteURL }}</p>`
    expect(renderMailTemplate(template, {
      ConfirmationURL: "http://localhost:9999/verify?token=abc&type=signup&redirect_to=http%3A%2F%2Flocalhost%3A3000",
      Email: "o'neil@example.com",
      SiteURL: "http://localhost:3000"
    })).toBe(
      `<h2>Confirm your signup</h2>\n<p><a href="http://localhost:9999/verify?token=abc&amp;type=signup&amp;redirect_to=http%3A%2F%2Flocalhost%3A3000">Confirm your mail</a> for o&#39;neil@example.com on http://localhost:3000</p>`
    )
  })
})
