import { escapeHtml } from "../../platform/http/Html.js"

/**
 * The variables an email template may use, named as GoTrue names them. Each is set only by the messages it makes
 * sense for (NewEmail by the email change); an unset one renders empty.
 */
export interface MailTemplateVariables {
  readonly SiteURL?: string
  readonly Email?: string
  readonly ConfirmationURL?: string
  readonly NewEmail?: string
  readonly Token?: string
  readonly TokenHash?: string
  readonly RedirectTo?: string
}

// `{{ .Name }}`, `{{.Name}}`: one field of the data, with any whitespace inside the braces.
const VARIABLE = /\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g

/**
 * Renders the subset of Go's text/template that GoTrue's documented email templates use: `{{ .Name }}`
 * substitutes a variable, HTML-escaped (the templates are HTML, and an address or a redirect_to is the user's
 * input). A name that is not a variable renders empty, as a missing map key does in Go. Every other action
 * (`{{ if … }}`, `{{ range … }}`, pipelines, `{{- … -}}` trim markers, comments) is left in the output as
 * written, so a template that needs more than substitution shows its markup instead of losing text silently.
 */
export const renderMailTemplate = (template: string, variables: MailTemplateVariables): string =>
  template.replace(VARIABLE, (_, name: string) => {
    const value = Object.hasOwn(variables, name) ? variables[name as keyof MailTemplateVariables] : undefined
    return value === undefined ? "" : escapeHtml(value)
  })
