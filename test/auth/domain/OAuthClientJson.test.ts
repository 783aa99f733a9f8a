import { describe, expect, it } from "@effect/vitest"
import { clientDetails, clientJson, splitList } from "../../../src/auth/domain/OAuthClientJson.js"

const row = {
  id: "6f1c3a2b-9d8e-4f7a-8b6c-5d4e3f2a1b0c",
  registration_type: "manual",
  redirect_uris: "https://a.example.com/cb, myapp://cb,",
  grant_types: "authorization_code,refresh_token",
  client_name: "Acme",
  client_uri: "",
  logo_uri: null,
  created_at: new Date("2025-01-02T03:04:05.000Z"),
  updated_at: new Date("2025-01-03T03:04:05.000Z"),
  client_type: "confidential",
  token_endpoint_auth_method: "client_secret_basic"
}

describe("a client's answers", () => {
  it("splits GoTrue's comma-joined lists, blanks dropped", () => {
    expect(splitList("a, b,,c ")).toEqual(["a", "b", "c"])
    expect(splitList("")).toEqual([])
  })

  it("answers a client as GoTrue does: lists split, empty names and URIs left out, the secret only when given", () => {
    expect(clientJson(row)).toStrictEqual({
      client_id: row.id,
      client_type: "confidential",
      redirect_uris: ["https://a.example.com/cb", "myapp://cb"],
      token_endpoint_auth_method: "client_secret_basic",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      client_name: "Acme",
      registration_type: "manual",
      created_at: "2025-01-02T03:04:05.000Z",
      updated_at: "2025-01-03T03:04:05.000Z"
    })
    expect(clientJson(row, "s3cret")).toMatchObject({ client_secret: "s3cret" })
  })

  it("shows the consent page and the grants id, name, uri and logo when set", () => {
    expect(clientDetails(row)).toStrictEqual({ id: row.id, name: "Acme" })
    expect(clientDetails({ ...row, client_name: null, client_uri: "https://acme.example.com", logo_uri: "https://acme.example.com/l.png" }))
      .toStrictEqual({ id: row.id, uri: "https://acme.example.com", logo_uri: "https://acme.example.com/l.png" })
  })
})
