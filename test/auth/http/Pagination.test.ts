import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { paginationHeaders, parsePagination } from "../../../src/auth/http/Pagination.js"

describe("GoTrue paging", () => {
  it("defaults to page 1 of 50; page 0 is page 1; digits only, and per_page above 0", () => {
    expect(parsePagination(undefined, undefined)).toEqual(Either.right({ page: 1, perPage: 50 }))
    expect(parsePagination("", "")).toEqual(Either.right({ page: 1, perPage: 50 }))
    expect(parsePagination("0", "2")).toEqual(Either.right({ page: 1, perPage: 2 }))
    expect(parsePagination("3", "10")).toEqual(Either.right({ page: 3, perPage: 10 }))
    for (const [page, perPage] of [["x", "1"], ["-1", "1"], ["1.5", "1"], [" 1", "1"], ["1e3", "1"], ["1", "0"], ["1", "-2"], ["99999999999999999999", "1"]]) {
      expect(Either.isLeft(parsePagination(page, perPage)), `${page} ${perPage}`).toBe(true)
    }
  })

  it("links the next page while there is one and always the last, page first in each URL, with the total", () => {
    expect(paginationHeaders("/admin/audit?per_page=2&query=action%3Alogin&page=1", { page: 1, perPage: 2 }, 5)).toEqual({
      link: `</admin/audit?page=2&per_page=2&query=action%3Alogin>; rel="next", </admin/audit?page=3&per_page=2&query=action%3Alogin>; rel="last"`,
      "x-total-count": "5"
    })
    expect(paginationHeaders("/admin/audit?page=3&per_page=2", { page: 3, perPage: 2 }, 5).link)
      .toBe(`</admin/audit?page=3&per_page=2>; rel="last"`)
    // Nothing matched: GoTrue's last page is 0.
    expect(paginationHeaders("/admin/audit", { page: 1, perPage: 50 }, 0)).toEqual({
      link: `</admin/audit?page=0>; rel="last"`,
      "x-total-count": "0"
    })
  })
})
