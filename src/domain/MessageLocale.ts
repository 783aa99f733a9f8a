import Negotiator from "negotiator"

/**
 * The languages Gatehouse has built-in texts for: its mails, its texts and its link confirmation page. English is
 * GoTrue's wording, kept byte for byte. The rule lives on the shared floor because the configuration checks
 * MAILER_LOCALES against this list at start-up, below the auth product that writes the texts.
 */
export const MESSAGE_LOCALES = ["en", "de", "fr", "es", "pt"] as const

export type MessageLocale = (typeof MESSAGE_LOCALES)[number]

/** What the operator offers: MAILER_LOCALES, and MAILER_DEFAULT_LOCALE (one of them). */
export interface LocaleOffer {
  readonly offered: ReadonlyArray<MessageLocale>
  readonly fallback: MessageLocale
}

/** GoTrue's behaviour, and the default: English only, whatever a user or a browser asks for. */
export const ENGLISH_ONLY: LocaleOffer = { offered: ["en"], fallback: "en" }

const LANGUAGE_TAG = /^\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]{1,8})*\s*$/

/** The language of a tag, lower-cased, its region or script dropped (pt-BR, pt_BR, PT → pt); undefined if no tag. */
export const languageOf = (tag: string): string | undefined => LANGUAGE_TAG.exec(tag)?.[1]?.toLowerCase()

/** A built-in locale by its exact name (MAILER_LOCALES' spelling: en, de, …), case aside. */
export const asMessageLocale = (name: string): MessageLocale | undefined =>
  MESSAGE_LOCALES.find((locale) => locale === name.trim().toLowerCase())

/**
 * The offered locale a stored preference names (user_metadata.locale is whatever an app wrote there: a string
 * such as "de" or "pt-BR", or anything else, which names none).
 */
export const preferredLocale = (preference: unknown, offer: LocaleOffer): MessageLocale | undefined => {
  if (typeof preference !== "string") return undefined
  const language = languageOf(preference)
  return offer.offered.find((locale) => locale === language)
}

/**
 * The offered locale an Accept-Language header prefers most, as `negotiator` ranks them (quality, then how
 * exactly a range matches: de-AT matches de). An absent or blank header asks for nothing; a wildcard accepts
 * anything, and gets the default, which is put first for that reason.
 */
export const negotiatedLocale = (acceptLanguage: string | undefined, offer: LocaleOffer): MessageLocale | undefined => {
  if (acceptLanguage === undefined || acceptLanguage.trim() === "") return undefined
  const ranked = [offer.fallback, ...offer.offered.filter((locale) => locale !== offer.fallback)]
  const best = new Negotiator({ headers: { "accept-language": acceptLanguage } }).languages(ranked)[0]
  return ranked.find((locale) => locale === best)
}

/**
 * The locale a message is written in: the user's own choice (user_metadata.locale) when it is offered, else the
 * request's Accept-Language, else the default. Only offered locales are ever chosen, so with MAILER_LOCALES unset
 * every message is English.
 */
export const chooseLocale = (
  offer: LocaleOffer,
  hints: { readonly preference?: unknown; readonly acceptLanguage?: string | undefined }
): MessageLocale => preferredLocale(hints.preference, offer) ?? negotiatedLocale(hints.acceptLanguage, offer) ?? offer.fallback
