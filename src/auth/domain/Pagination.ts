import * as Either from "effect/Either"

/**
 * Page-based listing as GoTrue's admin API does it (`internal/api/pagination.go`): `page` from 1, `per_page`
 * defaulting to 50. GoTrue puts no ceiling on per_page; we cap it at MAX_PER_PAGE so one request cannot ask for
 * the whole table. Empty values count as absent, because auth-js sends `page=&per_page=` when not told.
 */
export interface Page {
  readonly page: number
  readonly perPage: number
}

export const DEFAULT_PER_PAGE = 50
export const MAX_PER_PAGE = 1000

// GoTrue parses both with strconv.ParseUint: digits only (15 at most here, so the number stays exact).
const count = (name: string, raw: string | undefined, fallback: number): Either.Either<number, string> => {
  if (raw === undefined || raw === "") return Either.right(fallback)
  if (!/^\d{1,15}$/.test(raw)) return Either.left(`Bad Pagination Parameters: ${name} must be a positive integer`)
  return Either.right(Number(raw))
}

/** per_page 0 is refused, as GoTrue does; page 0 is served as page 1, as GoTrue's query layer does. */
export const parsePage = (page: string | undefined, perPage: string | undefined): Either.Either<Page, string> =>
  Either.gen(function*() {
    const p = yield* count("page", page, 1)
    const n = yield* count("per_page", perPage, DEFAULT_PER_PAGE)
    if (n === 0) return yield* Either.left("Bad Pagination Parameters: per_page must be a positive integer")
    return { page: Math.max(p, 1), perPage: Math.min(n, MAX_PER_PAGE) }
  })

/** How many pages `total` rows fill. */
export const lastPage = (total: number, perPage: number): number => Math.ceil(total / perPage)

/**
 * GoTrue's paging headers for a request (its path as the client sent it, and its query): `Link` and
 * `X-Total-Count`.
 */
export const pagingHeaders = (originalUrl: string, page: Page, total: number): Record<string, string> => {
  const url = new URL(originalUrl, "http://gatehouse.invalid")
  return { "x-total-count": String(total), link: linkHeader(url.pathname, [...url.searchParams.entries()], page, total) }
}

/**
 * GoTrue's Link header: a "next" link while pages remain, and always a "last" one. `page` and `per_page` come
 * first in each URL, before any other query parameter, because auth-js's listUsers reads the page number as the
 * text after the URL's first "=".
 */
export const linkHeader = (
  path: string,
  query: ReadonlyArray<readonly [string, string]>,
  page: Page,
  total: number
): string => {
  const others = query.filter(([key]) => key !== "page" && key !== "per_page")
  const url = (n: number) => {
    const params = new URLSearchParams([["page", String(n)], ["per_page", String(page.perPage)], ...others.map(([k, v]): [string, string] => [k, v])])
    return `<${path}?${params.toString()}>`
  }
  const last = lastPage(total, page.perPage)
  return `${last > page.page ? `${url(page.page + 1)}; rel="next", ` : ""}${url(last)}; rel="last"`
}
