import { Either } from "effect"

/** GoTrue's page-number paging (internal/api/pagination.go): `?page` from 1, `?per_page` 50 unless given. */
export interface Pagination {
  readonly page: number
  readonly perPage: number
}

export const DEFAULT_PER_PAGE = 50

// GoTrue parses both with strconv.ParseUint: digits only. Numbers past 2^53 would lose precision here, and no page
// that far can hold a row, so they are refused with the rest.
const parseCount = (name: string, raw: string | undefined, fallback: number): Either.Either<number, string> => {
  if (raw === undefined || raw === "") return Either.right(fallback)
  const value = Number(raw)
  return /^\d+$/.test(raw) && Number.isSafeInteger(value)
    ? Either.right(value)
    : Either.left(`Bad Pagination Parameters: ${name} must be a non-negative integer`)
}

/**
 * The paging a request asks for, or the validation message. per_page 0 is refused, as GoTrue does; page 0 is
 * served as page 1, as GoTrue's query layer does.
 */
export const parsePagination = (page: string | undefined, perPage: string | undefined): Either.Either<Pagination, string> =>
  Either.gen(function*() {
    const p = yield* parseCount("page", page, 1)
    const n = yield* parseCount("per_page", perPage, DEFAULT_PER_PAGE)
    if (n === 0) return yield* Either.left("Bad Pagination Parameters: per_page must be greater than 0")
    return { page: Math.max(p, 1), perPage: n }
  })

/** The request's own URL (path and query) with `page` replaced, and put first: auth-js reads the page from there. */
const pageUrl = (requestUrl: string, page: number): string => {
  const url = new URL(requestUrl, "http://gatehouse.invalid")
  url.searchParams.delete("page")
  // The other parameters in GoTrue's order (Go's url.Values.Encode sorts by key).
  url.searchParams.sort()
  const rest = url.searchParams.toString()
  return `${url.pathname}?page=${page}${rest === "" ? "" : `&${rest}`}`
}

/**
 * GoTrue's paging headers: `Link` with `rel="next"` while pages remain and always `rel="last"` (page 0 when
 * nothing matched, as GoTrue answers), and `X-Total-Count`.
 */
export const paginationHeaders = (requestUrl: string, { page, perPage }: Pagination, total: number): Record<string, string> => {
  const pages = Math.ceil(total / perPage)
  const next = pages > page ? `<${pageUrl(requestUrl, page + 1)}>; rel="next", ` : ""
  return { link: `${next}<${pageUrl(requestUrl, pages)}>; rel="last"`, "x-total-count": String(total) }
}
