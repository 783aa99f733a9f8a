import { describe, expect, it } from "@effect/vitest"
import { emailActionLink } from "../../../src/auth/domain/EmailActionLink.js"

describe("emailActionLink", () => {
  it("puts token, type and redirect_to on the path, under the external URL's own base path", () => {
    const link = new URL(emailActionLink("https://auth.example.com/auth/v1", "verify", "abc", "invite", "https://app.example.com/?a=1&b=2"))
    expect(`${link.origin}${link.pathname}`).toBe("https://auth.example.com/auth/v1/verify")
    expect([...link.searchParams]).toEqual([["token", "abc"], ["type", "invite"], ["redirect_to", "https://app.example.com/?a=1&b=2"]])
  })

  it("takes an absolute path from the host's root, as GoTrue's default /verify", () => {
    expect(emailActionLink("http://localhost:9999/", "/verify", "h", "signup", "http://localhost:3000"))
      .toBe("http://localhost:9999/verify?token=h&type=signup&redirect_to=http%3A%2F%2Flocalhost%3A3000")
  })
})
