/**
 * `{{ .Code }}` as Go's text/template reads it: any spacing inside the braces (`{{.Code}}`), and the trim
 * markers `{{- ` and ` -}}`, which eat the whitespace before or after the action. Go needs a space after `{{-`
 * and before `-}}` (otherwise the dash is a number's sign), so `{{-.Code}}` is not an action here either; its
 * whitespace is space, tab, CR and LF, no more.
 */
const CODE_ACTION = /([ \t\r\n]*)\{\{(-[ \t\r\n]+|[ \t\r\n]*)\.Code([ \t\r\n]+-|[ \t\r\n]*)\}\}([ \t\r\n]*)/g

/** Whether the template puts the code anywhere in the text at all. */
export const hasCodeAction = (template: string): boolean => new RegExp(CODE_ACTION.source).test(template)

/**
 * The text GoTrue would send: every `{{ .Code }}` replaced by the code. The body is plain text, so nothing is
 * escaped. Other actions are not interpreted and are sent as written (GoTrue's would fail the
 * send, as its template sees only the code); a template without the action is sent as it is,
 * as GoTrue does (the recipient then gets no code, which start-up warns about).
 */
export const renderSmsTemplate = (template: string, code: string): string =>
  template.replace(CODE_ACTION, (_match, before: string, open: string, close: string, after: string) =>
    (open.startsWith("-") ? "" : before) + code + (close.endsWith("-") ? "" : after))
