import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Code } from "@connectrpc/connect"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import {
  checkDescription, checkLoginUsername, checkPassword, checkPermissionName, checkRegistration, checkRoleName, normalizeEmail
} from "../../src/iam/domain/AccountRules.js"
import { accessStep, GUARDS, OPERATIONS } from "../../src/iam/domain/Guards.js"
import { IAM_CODES, httpStatusOf } from "../../src/iam/domain/IamStatus.js"
import { decideRefresh, sessionEnd, tokenExpiry } from "../../src/iam/domain/RefreshRotation.js"
import { tooLargeMessage } from "../../src/iam/domain/Refusals.js"
import { codeOfConnectName, connectCodeName, connectRefusalStatus, restateRefusal } from "../../src/iam/grpc/ConnectRefusals.js"
import { grpcCodeOf, iamCodeOfGrpc } from "../../src/iam/grpc/GrpcCodes.js"
import { ACTIONS, RESOURCES } from "../../src/iam/domain/ResourceAction.js"
import { actionEnum, actionOf, resourceEnum, resourceOf } from "../../src/iam/ProtoEnums.js"
import { contractMismatch } from "../../src/iam/IamContract.js"
import { policyRules } from "../../src/iam/access/IamPolicyRules.js"
import { embeddedSigningKey, generatePaserk, parseSigningKey } from "../../src/iam/tokens/IamKeys.js"
import { bearerToken } from "../../src/iam/tokens/IamSessions.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"

// The HTTP statuses Connect itself gives each gRPC code (connectrpc.com/docs/protocol#error-codes).
const CONNECT_HTTP: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400, [Code.Unauthenticated]: 401, [Code.PermissionDenied]: 403, [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409, [Code.FailedPrecondition]: 400, [Code.ResourceExhausted]: 429, [Code.Unavailable]: 503, [Code.Internal]: 500
}

describe("error mapping", () => {
  it.prop("every IAM code maps to one gRPC code and back, with Connect's HTTP status", [fc.constantFrom(...IAM_CODES)], ([code]) => {
    expect(iamCodeOfGrpc(grpcCodeOf(code))).toBe(code)
    expect(httpStatusOf(code)).toBe(CONNECT_HTTP[grpcCodeOf(code)])
  })
  it("uses the statuses of the reference", () => {
    expect(IAM_CODES.map((c) => [c, httpStatusOf(c)])).toEqual(expect.arrayContaining([
      ["invalid_argument", 400], ["unauthenticated", 401], ["permission_denied", 403], ["not_found", 404],
      ["already_exists", 409], ["unavailable", 503]
    ]))
  })
  it.prop("gRPC codes the service never sends count as internal", [fc.integer({ min: 0, max: 16 })], ([grpc]) => {
    const code = iamCodeOfGrpc(grpc as Code)
    expect(code === "internal" || grpcCodeOf(code) === grpc).toBe(true)
  })
})

describe("refresh rotation", () => {
  const date = fc.date({ min: new Date("2020-01-01"), max: new Date("2030-01-01"), noInvalidDate: true })
  const stored = fc.record({ expiresAt: date, spentAt: fc.option(date, { nil: null }), revokedAt: fc.option(date, { nil: null }) })
  const presented = fc.record({
    expiresAt: date,
    spentAt: fc.option(date, { nil: null }),
    revokedAt: fc.option(date, { nil: null }),
    child: fc.option(stored, { nil: undefined })
  })
  const policy = fc.record({ reuseIntervalMillis: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 60_000 })) })
  const ms = (d: Date) => d.getTime()

  it.prop("rotates only an unspent, unrevoked, unexpired token", [presented, date, policy], ([token, now, p]) => {
    const decision = decideRefresh(token, now, p)
    expect(decision._tag === "Rotate").toBe(token.spentAt === null && token.revokedAt === null && now < token.expiresAt)
  })
  it.prop("a revoked token is refused as revoked, whatever else is true of it", [presented, date, policy], ([token, now, p]) => {
    fc.pre(token.revokedAt !== null)
    expect(decideRefresh(token, now, p)).toEqual({ _tag: "Reject", reason: "revoked" })
  })
  it.prop("a spent token gets its child again only within the interval, while that child is current and unexpired",
    [presented, date, policy], ([token, now, p]) => {
      fc.pre(token.spentAt !== null && token.revokedAt === null)
      const decision = decideRefresh(token, now, p)
      const { child } = token
      const forgiven = p.reuseIntervalMillis > 0 && ms(now) - ms(token.spentAt!) <= p.reuseIntervalMillis &&
        child !== undefined && child.spentAt === null && child.revokedAt === null
      expect(decision._tag).toBe(!forgiven ? "ReuseDetected" : now < child!.expiresAt ? "ReturnChild" : "Reject")
    })
  it.prop("with no interval every spent token is reuse (the rule before the interval existed)", [presented, date], ([token, now]) => {
    fc.pre(token.spentAt !== null && token.revokedAt === null)
    expect(decideRefresh(token, now, { reuseIntervalMillis: 0 })._tag).toBe("ReuseDetected")
  })
  it.prop("past the interval a retry that got the child is reuse", [stored, date, fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 0, max: 120_000 })],
    ([child, spentAt, interval, elapsed]) => {
      const token = { expiresAt: new Date(ms(spentAt) + 1), spentAt, revokedAt: null, child: { ...child, spentAt: null, revokedAt: null } }
      const decision = decideRefresh(token, new Date(ms(spentAt) + elapsed), { reuseIntervalMillis: interval })
      if (elapsed > interval) expect(decision._tag).toBe("ReuseDetected")
      else expect(decision._tag).not.toBe("ReuseDetected")
    })
  it("an unknown token is rejected as unknown", () => {
    expect(decideRefresh(undefined, new Date(), { reuseIntervalMillis: 10_000 })).toEqual({ _tag: "Reject", reason: "unknown" })
  })

  const ttl = fc.integer({ min: 1, max: 90 * 86_400_000 })
  it.prop("a session with a ttl ends ttl from its start, never later than the refresh lifetime; without one it has no end",
    [date, fc.option(ttl, { nil: undefined }), ttl], ([start, requested, refreshTtl]) => {
      const end = sessionEnd(start, requested, refreshTtl)
      if (requested === undefined) expect(end).toBeNull()
      else expect(ms(end!) - ms(start)).toBe(Math.min(requested, refreshTtl))
    })
  it.prop("no token outlives its session: every refresh, at any moment, is bounded by the session's end",
    [date, ttl, ttl, ttl, fc.array(fc.integer({ min: 0, max: 90 * 86_400_000 }), { maxLength: 20 })],
    ([start, requested, accessTtl, refreshTtl, offsets]) => {
      const end = sessionEnd(start, requested, refreshTtl)!
      for (const offset of [0, ...offsets]) {
        const at = new Date(ms(start) + offset)
        for (const lifetime of [accessTtl, refreshTtl]) {
          const expiry = tokenExpiry(at, lifetime, end)
          expect(ms(expiry)).toBe(Math.min(ms(at) + lifetime, ms(end)))
        }
      }
      expect(tokenExpiry(start, accessTtl, null).getTime()).toBe(ms(start) + accessTtl)
    })
})

describe("guards", () => {
  it("every proto method has a handler and a guard", () => {
    expect(contractMismatch()).toEqual([])
    expect(Object.keys(GUARDS).sort()).toEqual([...OPERATIONS].sort())
  })
  it.prop("without a caller only public operations pass", [fc.constantFrom(...OPERATIONS), fc.nat()], ([op, target]) => {
    const step = accessStep(GUARDS[op], undefined, target)
    expect(step._tag).toBe(GUARDS[op]._tag === "Public" ? "Allow" : "Unauthenticated")
  })
  it.prop("a caller asking about themselves needs no policy for self-or-policy operations", [fc.integer({ min: 1 }), fc.constantFrom(0, -1)], ([caller, t]) => {
    const target = t === 0 ? 0 : caller
    expect(accessStep(GUARDS.CheckPermission, caller, target)._tag).toBe("Allow")
    expect(accessStep(GUARDS.CreateRole, caller, target)._tag).toBe("Enforce")
  })
})

describe("account rules", () => {
  it.prop("text PostgreSQL cannot store (U+0000) is refused by every rule before any query",
    [fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })], ([before, after]) => {
      const withNul = `${before}\u0000${after}`
      expect(Either.isLeft(normalizeEmail(`${withNul}@example.com`))).toBe(true)
      expect(Either.isLeft(checkLoginUsername(withNul))).toBe(true)
      expect(Either.isLeft(checkDescription(withNul))).toBe(true)
      expect(Either.isLeft(checkPermissionName(withNul))).toBe(true)
      expect(Either.isLeft(checkRoleName(withNul))).toBe(true)
      expect(Either.isLeft(checkRegistration({ username: withNul, email: "a@example.com", password: "long enough" }))).toBe(true)
    })

  it.prop("registration accepts exactly the spec's bounds", [fc.string({ minLength: 1, maxLength: 120 })], ([name]) => {
    const result = checkRegistration({ username: name, password: "long enough", email: "a@b.c" })
    const valid = [...name].length <= 100 && name.trim() === name && name.trim() !== "" && !/[\u0000-\u001f\u007f]/.test(name)
    expect(Either.isRight(result)).toBe(valid)
  })
  const invisible = fc.constantFrom(
    "\u0085", "\u0080", "\u009f", "\u202e", "\u202d", "\u2066", "\u2069", "\u200e", "\u200f", "\u200b", "\u200d", "\u2060",
    "\ufeff", "\u00ad", "\u061c", "\u2028", "\u2029", "\ue000", "\udc00", "\u0007", "\u007f"
  )
  it.prop("a new username holding a control, format, bidirectional, separator or private-use character is refused, wherever it is",
    [fc.string({ maxLength: 40 }), invisible, fc.string({ maxLength: 40 })], ([before, bad, after]) => {
      const result = checkRegistration({ username: `a${before}${bad}${after}z`, password: "long enough", email: "a@b.c" })
      expect(Either.isLeft(result)).toBe(true)
    })
  it.prop("a new username of visible characters from anywhere in Unicode is accepted",
    [fc.array(fc.fullUnicode().filter((c) => !/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\s]/u.test(c)), { minLength: 1, maxLength: 100 })],
    ([chars]) => {
      expect(checkRegistration({ username: chars.join(""), password: "long enough", email: "a@b.c" })).toEqual(Either.right({
        username: chars.join(""), password: "long enough", email: "a@b.c"
      }))
    })
  it("emails need an @, are lower-cased and bounded", () => {
    expect(normalizeEmail(" Alice@Example.COM ")).toEqual(Either.right("alice@example.com"))
    expect(Either.isLeft(normalizeEmail("no-at"))).toBe(true)
    expect(Either.isLeft(normalizeEmail(`${"a".repeat(95)}@b.com`))).toBe(true)
  })
  it("passwords are 8 characters to 72 bytes", () => {
    expect(Either.isLeft(checkPassword("short"))).toBe(true)
    expect(Either.isRight(checkPassword("a".repeat(72)))).toBe(true)
    expect(Either.isLeft(checkPassword("é".repeat(37)))).toBe(true)
  })
  it.prop("role names never contain ':' so a role cannot pose as a user subject", [fc.string()], ([name]) => {
    if (Either.isRight(checkRoleName(name))) expect(name).not.toContain(":")
  })
})

describe("enums and policy lines", () => {
  it("resource and action names round-trip through the proto enums", () => {
    for (const r of RESOURCES) expect(resourceOf(resourceEnum(r))).toBe(r)
    for (const a of ACTIONS) expect(actionOf(actionEnum(a))).toBe(a)
    expect(resourceOf(0)).toBeUndefined()
    expect(actionOf(99 as never)).toBeUndefined()
  })
  it("the database implies one line per grant and assignment, plus the admin role", () => {
    expect(policyRules("admin", [{ role: "editor", resource: "USER", action: "UPDATE" }], [{ userId: 7, role: "editor" }])).toEqual([
      ["p", "admin", "*", "*"], ["p", "editor", "USER", "UPDATE"], ["g", "user:7", "editor"]
    ])
  })
})

const newPair = () => Effect.runSync(Effect.provide(generatePaserk, SecureRandom.Live))

describe("keys and bearer tokens", () => {
  it("accepts PASERK and PEM keys and refuses a k4.secret whose halves do not match", () => {
    const pair = newPair()
    expect(parseSigningKey(pair.secret)).toEqual({ ok: pair })
    const pem = generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString()
    expect(parseSigningKey(pem.replaceAll("\n", "\\n")).ok?.secret).toMatch(/^k4\.secret\./)
    const other = newPair()
    expect(parseSigningKey(pair.secret.slice(0, 53) + other.secret.slice(53)).error).toBeDefined()
    expect(parseSigningKey(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type: "pkcs8" }).toString()).error)
      .toBeDefined()
  })
  it("the embedded default generates its key once and keeps it private", () => {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-iam-key-"))
    try {
      const keep = () => Effect.runSync(Effect.provide(embeddedSigningKey(dir), SecureRandom.Live))
      const first = keep()
      expect(keep()).toBe(first)
      expect(readFileSync(join(dir, "iam-paseto-key"), "utf8").trim()).toBe(first)
      expect(statSync(join(dir, "iam-paseto-key")).mode & 0o077).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
  it("a new key's seed is SecureRandom's 32 bytes: the same draw gives the same key, and a valid one", () => {
    const fromTest = () => Effect.runSync(Effect.provide(generatePaserk, SecureRandom.Test))
    const pair = fromTest()
    expect(fromTest()).toEqual(pair)
    expect(parseSigningKey(pair.secret)).toEqual({ ok: pair })
    expect(Buffer.from(pair.secret.slice("k4.secret.".length), "base64url").subarray(0, 32))
      .toEqual(Buffer.concat([Buffer.alloc(31), Buffer.of(1)]))
  })
  it("reads Bearer headers and bare tokens", () => {
    expect(bearerToken("Bearer abc")).toBe("abc")
    expect(bearerToken("bearer  abc")).toBe("abc")
    expect(bearerToken("abc")).toBe("abc")
    expect(bearerToken("Basic a b")).toBeUndefined()
    expect(bearerToken(undefined)).toBeUndefined()
  })
})

describe("refusals before a handler (domain/Refusals)", () => {
  const codes = fc.constantFrom(...Object.values(Code).filter((c): c is Code => typeof c === "number"))
  const limits = fc.integer({ min: 1024, max: 16 * 1024 * 1024 })

  it.prop("connect's JSON code names and the codes map one to one", [codes], ([code]) => {
    expect(codeOfConnectName(connectCodeName(code))).toBe(code)
  })

  it.prop("unparsable protobuf is never INTERNAL, and says nothing of the bytes", [fc.string(), limits], ([detail, limit]) => {
    expect(restateRefusal({ code: Code.Internal, message: `parse binary: ${detail}` }, limit))
      .toEqual({ code: Code.InvalidArgument, message: "request message is not valid protobuf" })
  })

  it.prop("a message over the limit is RESOURCE_EXHAUSTED in the REST words, 413 over Connect", [fc.nat(), limits], ([size, limit]) => {
    const refusal = restateRefusal({ code: Code.ResourceExhausted, message: `message size ${size} is larger than configured readMaxBytes ${limit}` }, limit)
    expect(refusal).toEqual({ code: Code.ResourceExhausted, message: tooLargeMessage(limit) })
    expect(connectRefusalStatus(refusal, 429, limit)).toBe(413)
  })

  it.prop("any other refusal is kept, with Connect's status, and restating is idempotent", [codes, fc.string(), limits, fc.integer({ min: 400, max: 599 })],
    ([code, message, limit, status]) => {
      const refusal = { code, message }
      const once = restateRefusal(refusal, limit)
      expect(restateRefusal(once, limit)).toEqual(once)
      if (!message.startsWith("parse binary") && !message.includes("readMaxBytes")) {
        expect(once).toEqual(refusal)
        expect(connectRefusalStatus(once, status, limit)).toBe(message === tooLargeMessage(limit) && code === Code.ResourceExhausted ? 413 : status)
      }
    })
})
