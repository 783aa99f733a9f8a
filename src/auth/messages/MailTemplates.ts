import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Cache from "effect/Cache"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { MessageLocale } from "../../domain/MessageLocale.js"
import type { MailKind } from "./BuiltInTexts.js"
import { type MailTemplateVariables, renderMailTemplate } from "./MailTemplate.js"
import { traced } from "../../platform/Traced.js"

/** The mails whose body an operator can replace with a template (MAILER_TEMPLATES_*): every one. */
export type MailTemplateName = MailKind

/** GoTrue's internal HTTP timeout: the longest a template fetch may hold up the request that sends the mail. */
export const templateFetchTimeout: Duration.Duration = Duration.seconds(10)
/** GoTrue's TEMPLATE_MAX_AGE: an edited template reaches the mails within this long. */
export const templateMaxAge: Duration.Duration = Duration.minutes(10)
/**
 * How long a failed fetch stands before the next mail tries again: short enough that a fixed template server is
 * picked up soon, long enough that a server that is down does not cost every mail the full timeout.
 */
export const templateRetryAfter: Duration.Duration = Duration.minutes(1)

class TemplateUnavailable extends Data.TaggedError("TemplateUnavailable")<{ readonly reason: string }> {}

// Query strings may carry a signed-URL credential; the log names the template by origin and path only.
const describeUrl = (url: string): string => {
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname}`
}

/**
 * The remote email templates named by MAILER_TEMPLATES_* (and MAILER_TEMPLATES_*_<LOCALE>, for mails in that
 * locale), fetched on first use and cached, rendered with a mail's variables. A template never fails a mail: unset, unreachable, slow, non-2xx or empty all give None, and the
 * caller sends its built-in body.
 */
export class MailTemplates extends Effect.Service<MailTemplates>()("auth/MailTemplates", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.filterStatusOk)

    const fetchTemplate = (url: string): Effect.Effect<string, TemplateUnavailable> =>
      client.get(url).pipe(
        Effect.flatMap((response) => response.text),
        Effect.mapError((error) =>
          new TemplateUnavailable({ reason: error._tag === "ResponseError" ? `status ${error.response.status}` : error.reason })
        ),
        Effect.timeoutFail({
          duration: templateFetchTimeout,
          onTimeout: () => new TemplateUnavailable({ reason: `no answer within ${Duration.format(templateFetchTimeout)}` })
        }),
        Effect.filterOrFail((body) => body.trim() !== "", () => new TemplateUnavailable({ reason: "empty body" })),
        Effect.tapError(({ reason }) =>
          Effect.logWarning(`email template ${describeUrl(url)} unavailable (${reason}): using the built-in body`)
        )
      )

    // Keyed by URL; concurrent mails wait for one fetch. Failures are cached too, but only briefly.
    const cache = yield* Cache.makeWith({
      capacity: 16,
      lookup: fetchTemplate,
      timeToLive: Exit.match({ onFailure: () => templateRetryAfter, onSuccess: () => templateMaxAge })
    })

    const render = traced("MailTemplates.render")(function*(
      name: MailTemplateName,
      locale: MessageLocale,
      variables: MailTemplateVariables
    ): Effect.fn.Return<Option.Option<string>> {
      const url = config.mailer.localization.byLocale.get(locale)?.templates[name]
      if (url === undefined) return Option.none()
      const template = yield* Effect.option(cache.get(url))
      return Option.map(template, (text) => renderMailTemplate(text, variables))
    })

    return { render } as const
  }),
  dependencies: [FetchHttpClient.layer]
}) {
  /** Templates given as text, for tests of the messages that use them (in any locale); a name left out has none. */
  static readonly Test = (templates: Partial<Record<MailTemplateName, string>>): Layer.Layer<MailTemplates> =>
    Layer.succeed(
      MailTemplates,
      MailTemplates.make({
        render: (name, _locale, variables) =>
          Effect.succeed(Option.map(Option.fromNullable(templates[name]), (text) => renderMailTemplate(text, variables)))
      })
    )
}
