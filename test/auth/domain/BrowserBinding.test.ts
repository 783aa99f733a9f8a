import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  BROWSER_BINDING_BYTES,
  browserBindingCookie,
  browserBindingFor,
  digestBrowserBinding,
  isBrowserBinding
} from "../../../src/auth/domain/BrowserBinding.js"
import { FLOW_STATE_EXPIRY_SECONDS } from "../../../src/auth/domain/Pkce.js"

const binding = FastCheck.uint8Array({ minLength: BROWSER_BINDING_BYTES, maxLength: BROWSER_BINDING_BYTES })
  .map((bytes) => Buffer.from(bytes).toString("base64url"))
const notBinding = FastCheck.oneof(
  FastCheck.string(),
  binding.map((value) => `${value}=`),
  binding.map((value) => value.slice(1)),
  binding.map((value) => `${value.slice(1)}.`),
  FastCheck.constant(undefined)
)

describe("the OAuth browser binding", () => {
  it.prop("a flow takes the binding the browser presents when it is one this server could have issued, else the new one", {
    presented: FastCheck.oneof(binding, notBinding),
    fresh: binding
  }, ({ fresh, presented }) => {
    const chosen = browserBindingFor(presented, fresh)
    expect(chosen).toBe(isBrowserBinding(presented) ? presented : fresh)
    expect(isBrowserBinding(chosen)).toBe(true)
  })

  it.prop("a binding is 32 random bytes in base64url; nothing else passes for one", { value: binding, other: notBinding }, ({ other, value }) => {
    expect(isBrowserBinding(value)).toBe(true)
    expect(isBrowserBinding(other)).toBe(false)
  })

  it.prop("the stored digest is the binding's SHA-256, never the binding itself, and tells bindings apart", {
    a: binding,
    b: binding
  }, ({ a, b }) => {
    expect(digestBrowserBinding(a)).toMatch(/^[0-9a-f]{64}$/)
    expect(digestBrowserBinding(a)).not.toContain(a)
    expect(digestBrowserBinding(a) === digestBrowserBinding(b)).toBe(a === b)
  })

  it.prop("on https the cookie is __Host-, Secure and SameSite=None; on http it is Lax without Secure; it lives as long as a flow", {
    secure: FastCheck.boolean(),
    host: FastCheck.domain(),
    path: FastCheck.constantFrom("", "/", "/auth/v1"),
    upper: FastCheck.boolean()
  }, ({ host, path, secure, upper }) => {
    const scheme = secure ? "https" : "http"
    const cookie = browserBindingCookie(`${upper ? scheme.toUpperCase() : scheme}://${host}${path}`)
    expect(cookie).toEqual(secure
      ? { name: "__Host-gatehouse-oauth", secure: true, sameSite: "none", maxAgeSeconds: FLOW_STATE_EXPIRY_SECONDS, path: "/" }
      : { name: "gatehouse-oauth", secure: false, sameSite: "lax", maxAgeSeconds: FLOW_STATE_EXPIRY_SECONDS, path: "/" })
    expect(cookie.maxAgeSeconds).toBe(300)
  })
})
