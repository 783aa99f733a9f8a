/**
 * GoTrue's assurance rules against a model, over HTTP: random sequences of password sign-ins, TOTP enrolments,
 * verifications, refreshes, unenrolments and admin deletions by one user, each run against a real server and
 * against the pure model below, which is GoTrue's rules written out (docs/plans/issue-27-mfa-passkeys.md §2):
 * - a sign-in starts an aal1 session with the `password` claim;
 * - enrolling needs an aal2 session row once the user has a verified factor (403 insufficient_aal);
 * - verifying raises the session (claim `totp`, row aal2 and its factor), ends the user's other sessions below aal2,
 *   and removes the user's other unverified TOTP factors;
 * - a refresh keeps the claims, so the token's aal is what they give;
 * - unenrolling a verified factor needs an aal2 row (422 insufficient_aal); an admin's delete needs nothing; either
 *   drops every session that factor raised to aal1 and takes its `totp` claim.
 * After every step each live session is refreshed and its token's aal and amr compared with the model's.
 */
import { expect } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { Secret, TOTP } from "otpauth"
import { acceptance, adminJwt, decodeJwt, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"
import { ServerUrl } from "../../support/TestServer.js"

interface ModelSession {
  readonly name: number
  refresh: string
  access: string
  rowAal: "aal1" | "aal2"
  factorId: string | null
  claims: Set<string>
}

interface ModelFactor {
  readonly id: string
  readonly secret: string
  verified: boolean
}

type Command =
  | { readonly op: "signIn" }
  | { readonly op: "enroll"; readonly session: number }
  | { readonly op: "verify"; readonly factor: number; readonly session: number }
  | { readonly op: "refresh"; readonly session: number }
  | { readonly op: "unenroll"; readonly factor: number; readonly session: number }
  | { readonly op: "adminDelete"; readonly factor: number }

// Sign-ins are weighted up: a verify ends every aal1 session, and only a later sign-in makes one an aal gate can refuse.
const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.constant({ op: "signIn" as const }), weight: 3 },
  fc.record({ op: fc.constant("enroll" as const), session: fc.nat(5) }),
  fc.record({ op: fc.constant("verify" as const), factor: fc.nat(5), session: fc.nat(5) }),
  fc.record({ op: fc.constant("verify" as const), factor: fc.nat(5), session: fc.nat(5) }),
  fc.record({ op: fc.constant("refresh" as const), session: fc.nat(5) }),
  fc.record({ op: fc.constant("unenroll" as const), factor: fc.nat(5), session: fc.nat(5) }),
  fc.record({ op: fc.constant("adminDelete" as const), factor: fc.nat(5) })
)

const aalOf = (claims: ReadonlySet<string>) => (claims.has("totp") ? "aal2" : "aal1")

// The server refuses a TOTP code whose time step is not after the last one it accepted for the factor (a replay
// guard), and accepts one step either side of now: a factor can be verified with this step's code, then the next
// step's, and no more within a run that lasts less than a step. The model verifies each factor at most twice.
const codeFor = (secret: string, uses: number) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({
    timestamp: Date.now() + Math.min(uses, 1) * 30_000
  })

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })("assurance levels against GoTrue's rules", (it) => {
  it.effect("any sequence of sign-in, enrol, verify, refresh, unenrol and admin delete gives GoTrue's levels", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const admin = adminJwt()
      // What the runs exercised, so the test fails if the generator stops reaching the interesting cases.
      const seen = new Map<string, number>()
      const saw = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
      const run = (commands: ReadonlyArray<Command>) =>
        Effect.gen(function*() {
          const email = uniqueEmail("aal")
          const signedUp = yield* raw(url, "/signup", { body: { email, password: PASSWORD } })
          expect(signedUp.status).toBe(200)
          const userId: string = signedUp.json.user.id
          const sessions: Array<ModelSession> = []
          const factors: Array<ModelFactor> = []
          const uses = new Map<string, number>()
          let names = 0
          let enrolled = 0
          const trace: Array<string> = []

          const expectLevel = (s: ModelSession, access: string) => {
            const claims = decodeJwt(access).payload
            expect(claims["aal"], trace.join(" ")).toBe(aalOf(s.claims))
            expect(new Set((claims["amr"] as Array<{ method: string }>).map((a) => a.method)), trace.join(" ")).toEqual(s.claims)
          }

          const refresh = (s: ModelSession) =>
            Effect.gen(function*() {
              const answer = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: s.refresh } })
              expect(answer.status, `${trace.join(" ")}: ${answer.text}`).toBe(200)
              s.refresh = answer.json.refresh_token
              s.access = answer.json.access_token
              expectLevel(s, s.access)
              expect(answer.json.user.factors?.length ?? 0, trace.join(" ")).toBe(factors.length)
            })

          const downgrade = (factorId: string) => {
            for (const s of sessions) {
              if (s.factorId === factorId) {
                s.rowAal = "aal1"
                s.factorId = null
                s.claims.delete("totp")
              }
            }
          }

          // Every run starts signed in: without a session nothing else has anyone to act for.
          for (const c of [{ op: "signIn" } as Command, ...commands]) {
            trace.push(JSON.stringify(c))
            const s = "session" in c ? sessions[c.session % Math.max(sessions.length, 1)] : undefined
            const f = "factor" in c ? factors[c.factor % Math.max(factors.length, 1)] : undefined
            switch (c.op) {
              case "signIn": {
                const answer = yield* raw(url, "/token?grant_type=password", { body: { email, password: PASSWORD } })
                expect(answer.status).toBe(200)
                const session: ModelSession = {
                  name: names++, refresh: answer.json.refresh_token, access: answer.json.access_token, rowAal: "aal1",
                  factorId: null, claims: new Set(["password"])
                }
                sessions.push(session)
                expectLevel(session, session.access)
                break
              }
              case "enroll": {
                if (s === undefined || factors.length >= 8) break
                const answer = yield* raw(url, "/factors", {
                  bearer: s.access, apiVersion: true, body: { factor_type: "totp", friendly_name: `factor ${enrolled++}` }
                })
                if (factors.some((x) => x.verified) && s.rowAal !== "aal2") {
                  expect([answer.status, answer.json?.code], trace.join(" ")).toEqual([403, "insufficient_aal"])
                  saw("enroll refused")
                } else {
                  expect(answer.status, `${trace.join(" ")}: ${answer.text}`).toBe(200)
                  saw("enrolled")
                  factors.push({ id: answer.json.id, secret: answer.json.totp.secret, verified: false })
                }
                break
              }
              case "verify": {
                if (s === undefined || f === undefined || (uses.get(f.id) ?? 0) >= 2) break
                const challenge = yield* raw(url, `/factors/${f.id}/challenge`, { bearer: s.access, apiVersion: true, body: {} })
                expect(challenge.status, `${trace.join(" ")}: ${challenge.text}`).toBe(200)
                const used = uses.get(f.id) ?? 0
                uses.set(f.id, used + 1)
                const answer = yield* raw(url, `/factors/${f.id}/verify`, {
                  bearer: s.access, apiVersion: true, body: { challenge_id: challenge.json.id, code: codeFor(f.secret, used) }
                })
                expect(answer.status, `${trace.join(" ")}: ${answer.text}`).toBe(200)
                saw(f.verified ? "verified again" : "verified")
                f.verified = true
                s.claims.add("totp")
                s.rowAal = "aal2"
                s.factorId = f.id
                s.refresh = answer.json.refresh_token
                s.access = answer.json.access_token
                expectLevel(s, s.access)
                sessions.splice(0, sessions.length, ...sessions.filter((x) => x.rowAal === "aal2"))
                factors.splice(0, factors.length, ...factors.filter((x) => x.verified))
                break
              }
              case "refresh": {
                if (s !== undefined) yield* refresh(s)
                break
              }
              case "unenroll": {
                if (s === undefined || f === undefined) break
                const answer = yield* raw(url, `/factors/${f.id}`, { method: "DELETE", bearer: s.access, apiVersion: true })
                if (f.verified && s.rowAal !== "aal2") {
                  expect([answer.status, answer.json?.code], trace.join(" ")).toEqual([422, "insufficient_aal"])
                  saw("unenroll refused")
                } else {
                  expect([answer.status, answer.json], trace.join(" ")).toEqual([200, { id: f.id }])
                  saw(sessions.some((x) => x.factorId === f.id) ? "unenrolled, sessions lowered" : "unenrolled")
                  factors.splice(factors.indexOf(f), 1)
                  downgrade(f.id)
                }
                break
              }
              case "adminDelete": {
                if (f === undefined) break
                const answer = yield* raw(url, `/admin/users/${userId}/factors/${f.id}`, { method: "DELETE", bearer: admin, apiVersion: true })
                expect([answer.status, answer.json?.id], trace.join(" ")).toEqual([200, f.id])
                saw("admin deleted")
                factors.splice(factors.indexOf(f), 1)
                downgrade(f.id)
                break
              }
            }
            // Every session the model says is alive is, and its next token carries the model's level.
            for (const live of sessions) yield* refresh(live)
          }
          // The sessions the model ended are gone: the user has exactly the model's.
          const listed = yield* raw(url, `/admin/users/${userId}/factors`, { bearer: admin })
          expect(listed.json.map((x: { id: string }) => x.id).sort()).toEqual(factors.map((x) => x.id).sort())
        })
      yield* Effect.promise(() =>
        fc.assert(fc.asyncProperty(fc.array(command, { minLength: 8, maxLength: 20 }), (commands) => Effect.runPromise(run(commands))), {
          numRuns: 40,
          // One sequence that reaches every case, whatever the random ones reach.
          examples: [[[
            { op: "enroll", session: 0 },
            { op: "verify", factor: 0, session: 0 },
            { op: "signIn" },
            { op: "enroll", session: 1 },
            { op: "unenroll", factor: 0, session: 1 },
            { op: "verify", factor: 0, session: 1 },
            { op: "unenroll", factor: 0, session: 0 },
            { op: "enroll", session: 0 },
            { op: "adminDelete", factor: 0 }
          ]]]
        }))
      for (const what of ["enrolled", "enroll refused", "verified", "verified again", "unenroll refused", "unenrolled, sessions lowered", "admin deleted"]) {
        expect(seen.get(what) ?? 0, `${what}: ${JSON.stringify([...seen])}`).toBeGreaterThan(0)
      }
    }), { timeout: 300_000 })
})
