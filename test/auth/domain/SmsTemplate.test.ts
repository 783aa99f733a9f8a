import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { hasCodeAction, renderSmsTemplate } from "../../../src/auth/domain/SmsTemplate.js"
import { DEFAULT_SMS_TEMPLATE } from "../../../src/config/AuthConfig.js"

const code = FastCheck.stringMatching(/^\d{6,10}$/)
/** Template text around the action: anything without braces, so it holds no action of its own. */
const text = FastCheck.string().filter((s) => !s.includes("{") && !s.includes("}"))
const spaces = FastCheck.constantFrom("", " ", "  ", "\t")
const blank = FastCheck.constantFrom("", " ", "\n", " \n\t")

describe("renderSmsTemplate", () => {
  it.prop("GoTrue's default says the code", [code], ([c]) => {
    expect(renderSmsTemplate(DEFAULT_SMS_TEMPLATE, c)).toBe(`Your code is ${c}`)
  })

  it.prop(
    "{{ .Code }} with any spacing inside the braces is replaced, the text around it kept",
    [text, spaces, spaces, text, code],
    ([before, left, right, after, c]) => {
      const template = `${before}{{${left}.Code${right}}}${after}`
      expect(hasCodeAction(template)).toBe(true)
      expect(renderSmsTemplate(template, c)).toBe(`${before}${c}${after}`)
    }
  )

  it.prop("every occurrence is replaced", [text, text, text, code], ([a, b, d, c]) => {
    expect(renderSmsTemplate(`${a}{{ .Code }}${b}{{.Code}}${d}`, c)).toBe(`${a}${c}${b}${c}${d}`)
  })

  it.prop(
    "trim markers eat the whitespace on their side only, as text/template's do",
    [text, blank, blank, text, code],
    ([before, ws1, ws2, after, c]) => {
      const lead = `x${before}`
      const tail = `${after}y`
      expect(renderSmsTemplate(`${lead}${ws1}{{- .Code }}${ws2}${tail}`, c)).toBe(`${(lead + ws1).trimEnd()}${c}${ws2}${tail}`)
      expect(renderSmsTemplate(`${lead}${ws1}{{ .Code -}}${ws2}${tail}`, c)).toBe(`${lead}${ws1}${c}${(ws2 + tail).trimStart()}`)
    }
  )

  it.prop("a template without the action is sent as written", [text, code], ([template, c]) => {
    expect(hasCodeAction(template)).toBe(false)
    expect(renderSmsTemplate(template, c)).toBe(template)
  })

  it("other actions and malformed ones are left as written; the code is not escaped", () => {
    expect(renderSmsTemplate("{{ .Phone }}: {{ .Code }}", "123456")).toBe("{{ .Phone }}: 123456")
    expect(renderSmsTemplate("{{ .code }} {{-.Code}} {{ Code }}", "123456")).toBe("{{ .code }} {{-.Code}} {{ Code }}")
    expect(renderSmsTemplate("<b>{{ .Code }}</b> & more", "123456")).toBe("<b>123456</b> & more")
  })
})
