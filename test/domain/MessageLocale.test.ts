import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  chooseLocale,
  ENGLISH_ONLY,
  languageOf,
  type LocaleOffer,
  MESSAGE_LOCALES,
  type MessageLocale,
  negotiatedLocale
} from "../../src/domain/MessageLocale.js"

const locale = FastCheck.constantFrom(...MESSAGE_LOCALES)

/** Any offer an operator can configure: some built-in locales, the default among them. */
const offer: FastCheck.Arbitrary<LocaleOffer> = FastCheck.uniqueArray(locale, { minLength: 1 }).chain((offered) =>
  FastCheck.constantFrom(...offered).map((fallback) => ({ offered, fallback }))
)

/** A tag as apps write one: a language, maybe a region or script (after "-", or "_" as in POSIX locales), in any case. */
const tagOf = (language: FastCheck.Arbitrary<string>, subtags = ["", "-BR", "-AT", "_PT", "-Latn", "-419"]) =>
  FastCheck.tuple(language, FastCheck.constantFrom(...subtags), FastCheck.boolean()).map(
    ([lang, region, upper]) => upper ? `${lang}${region}`.toUpperCase() : `${lang}${region}`
  )

/** Anything at all in user_metadata.locale, or in an Accept-Language header. */
const anyPreference = FastCheck.oneof(FastCheck.anything(), FastCheck.string(), tagOf(FastCheck.constantFrom("xx", "it", "zz")))
const anyHeader = FastCheck.option(FastCheck.oneof(FastCheck.string(), FastCheck.string({ unit: "binary" })), { nil: undefined })

describe("chooseLocale", () => {
  it.prop("only ever chooses an offered locale, whatever the user's metadata or header say", [offer, anyPreference, anyHeader], ([o, preference, header]) => {
    expect(o.offered).toContain(chooseLocale(o, { preference, acceptLanguage: header }))
  })

  it.prop("English only (MAILER_LOCALES unset) is English, whatever else", [anyPreference, anyHeader, tagOf(locale)], ([preference, header, tag]) => {
    expect(chooseLocale(ENGLISH_ONLY, { preference, acceptLanguage: header })).toBe("en")
    expect(chooseLocale(ENGLISH_ONLY, { preference: tag, acceptLanguage: tag })).toBe("en")
  })

  it.prop("an offered user_metadata.locale wins over any header, its region dropped", [offer, anyHeader], ([o, header]) =>
    FastCheck.assert(FastCheck.property(tagOf(FastCheck.constantFrom(...o.offered)), (tag) => {
      expect(chooseLocale(o, { preference: tag, acceptLanguage: header })).toBe(languageOf(tag))
    }), { numRuns: 10 }))

  it.prop("without a usable preference, the header's one offered language is chosen", [offer, anyPreference], ([o, preference]) =>
    // An HTTP language range separates its subtags with "-" only (RFC 4647).
    FastCheck.assert(FastCheck.property(tagOf(FastCheck.constantFrom(...o.offered), ["", "-BR", "-AT", "-Latn", "-419"]), (tag) => {
      const wanted = languageOf(tag) as MessageLocale
      expect(chooseLocale(o, { preference, acceptLanguage: `${tag}, xx;q=0.9` })).toBe(
        typeof preference === "string" && o.offered.includes(languageOf(preference) as MessageLocale) ? languageOf(preference) : wanted
      )
    }), { numRuns: 10 }))

  it.prop("nothing usable (no preference, an absent, blank, wildcard or unknown header) is the default", [offer], ([o]) => {
    for (const header of [undefined, "", "  ", "*", "xx-YY", "it;q=1", "de;q=0, fr;q=0, es;q=0, pt;q=0, en;q=0"]) {
      expect(chooseLocale(o, { preference: null, acceptLanguage: header })).toBe(o.fallback)
    }
  })
})

describe("negotiatedLocale", () => {
  it.each<[string, MessageLocale | undefined]>([
    ["pt-BR,pt;q=0.9,en;q=0.5", "pt"],
    ["de-AT", "de"],
    ["en-US,en;q=0.9,fr;q=0.95", "fr"],
    ["es;q=0.1, fr;q=0.2", "fr"],
    ["xx, *;q=0.1", "en"],
    ["it", undefined]
  ])("%j among all, default en, gives %j", (header, expected) => {
    expect(negotiatedLocale(header, { offered: [...MESSAGE_LOCALES], fallback: "en" })).toBe(expected)
  })
})
