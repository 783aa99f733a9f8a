import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { DEFAULT_PER_PAGE, lastPage, linkHeader, MAX_PER_PAGE, parsePage } from "../../../src/auth/domain/Pagination.js"

/** What auth-js's listUsers reads from a Link header (GoTrueAdminApi.listUsers), without its one-digit cut. */
const authJsPages = (header: string): Record<string, number> =>
  Object.fromEntries(header.split(",").map((link) => {
    const page = parseInt(link.split(";")[0]!.split("=")[1]!)
    const rel = JSON.parse(link.split(";")[1]!.split("=")[1]!) as string
    return [rel, page]
  }))

describe("parsePage", () => {
  it("defaults: absent and empty values (auth-js sends page=&per_page=) mean page 1 of 50", () => {
    expect(parsePage(undefined, undefined)).toEqual(Either.right({ page: 1, perPage: DEFAULT_PER_PAGE }))
    expect(parsePage("", "")).toEqual(Either.right({ page: 1, perPage: DEFAULT_PER_PAGE }))
  })

  it("page 0 is page 1, as in GoTrue", () => {
    expect(parsePage("0", "2")).toEqual(Either.right({ page: 1, perPage: 2 }))
  })

  it.each([["99999999999999999999", "1"], ["x", "1"], ["1", "0"], ["1", "-5"], ["1.5", "2"], [" 1", "2"], ["1", "1e3"]])("page %j per_page %j is refused", (page, perPage) => {
    expect(Either.isLeft(parsePage(page, perPage))).toBe(true)
  })

  it.prop("positive integers are taken, per_page capped at the maximum", [
    FastCheck.integer({ min: 1, max: 1e9 }),
    FastCheck.integer({ min: 1, max: 1e9 })
  ], ([page, perPage]) => {
    expect(parsePage(String(page), String(perPage))).toEqual(Either.right({ page, perPage: Math.min(perPage, MAX_PER_PAGE) }))
  })
})

describe("linkHeader", () => {
  it("is GoTrue's: next while pages remain, always last, page first in every URL", () => {
    expect(linkHeader("/admin/users", [["filter", "a b"], ["page", "1"], ["per_page", "2"]], { page: 1, perPage: 2 }, 5)).toBe(
      "</admin/users?page=2&per_page=2&filter=a+b>; rel=\"next\", </admin/users?page=3&per_page=2&filter=a+b>; rel=\"last\""
    )
    expect(linkHeader("/admin/users", [], { page: 1, perPage: 50 }, 0)).toBe("</admin/users?page=0&per_page=50>; rel=\"last\"")
  })

  it.prop("auth-js reads next (when there is one) and last back from it", [
    FastCheck.integer({ min: 1, max: 100 }),
    FastCheck.integer({ min: 1, max: 1000 }),
    FastCheck.integer({ min: 0, max: 100_000 }),
    FastCheck.array(FastCheck.tuple(FastCheck.string(), FastCheck.string()), { maxLength: 3 })
  ], ([page, perPage, total, query]) => {
    const pages = authJsPages(linkHeader("/auth/v1/admin/users", query.filter(([k]) => !k.includes(",")), { page, perPage }, total))
    const last = lastPage(total, perPage)
    expect(pages).toEqual(last > page ? { next: page + 1, last } : { last })
    expect(last * perPage >= total && (last - 1) * perPage < Math.max(total, 1)).toBe(true)
  })
})
