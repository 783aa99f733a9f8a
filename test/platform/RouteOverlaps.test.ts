import { describe, expect, it } from "@effect/vitest"
import { documentRouteOverlaps } from "../../src/platform/http/RouteOverlaps.js"

const operation = (operationId: string, extra: Record<string, unknown> = {}) => ({
  operationId,
  parameters: [{ name: "identity_id", in: "path", required: true }, { name: "X-Trace", in: "header" }],
  responses: { 200: { description: "ok" } },
  ...extra
})

describe("documentRouteOverlaps", () => {
  it("copies a templated path's method to a fixed path the router takes through the parameter", () => {
    const spec = {
      paths: {
        "/user/identities/authorize": { get: operation("linkIdentity", { parameters: [] }) },
        "/user/identities/{identity_id}": { delete: operation("unlinkIdentity", { links: { next: {} } }) }
      }
    }
    const out = documentRouteOverlaps(spec)
    const copied = out["paths"]["/user/identities/authorize"]["delete"]
    expect(copied["operationId"]).toBe("unlinkIdentity.at_user_identities_authorize")
    // The fixed parameter is gone; the others stay, and so do the responses; links of the template are not copied.
    expect(copied["parameters"]).toEqual([{ name: "X-Trace", in: "header" }])
    expect(copied["responses"]).toEqual({ 200: { description: "ok" } })
    expect(copied["links"]).toBeUndefined()
    expect(copied["description"]).toContain(`identity_id = "authorize"`)
    // The fixed path's own method and the template itself are untouched.
    expect(out["paths"]["/user/identities/authorize"]["get"]["operationId"]).toBe("linkIdentity")
    expect(out["paths"]["/user/identities/{identity_id}"]).toBe(spec.paths["/user/identities/{identity_id}"])
  })

  it("leaves paths alone that no template matches, and never overrides a method the fixed path has", () => {
    const spec = {
      paths: {
        "/a/b": { delete: operation("own") },
        "/a/{x}": { delete: operation("templated") },
        "/a/b/c": { get: operation("deeper") },
        "/c/{x}": { put: operation("elsewhere") }
      }
    }
    const out = documentRouteOverlaps(spec)
    expect(out["paths"]["/a/b"]).toEqual({ delete: operation("own") })
    expect(out["paths"]["/a/b/c"]).toEqual({ get: operation("deeper") })
  })
})
