import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option } from "effect"
import { configLayer } from "../../src/config/AppConfig.js"
import {
  ASSIGNMENT_DANGLES, GRANT_DANGLES, PERMISSION_NAME_TAKEN, ROLE_NAME_TAKEN, RolesRepo
} from "../../src/iam/store/RolesRepo.js"
import { AccountsRepo, EMAIL_WITHOUT_AT, TAKEN } from "../../src/iam/store/AccountsRepo.js"
import { LoginThrottleRepo } from "../../src/iam/store/LoginThrottleRepo.js"
import { admitLogin, type FailureCount } from "../../src/iam/domain/LoginBackoff.js"
import { requestRate } from "../../src/domain/RequestRate.js"
import { IamError } from "../../src/iam/domain/IamError.js"
import { IamSql } from "../../src/iam/IamSql.js"
import { RevocationsRepo } from "../../src/iam/store/RevocationsRepo.js"
import { type NewFamilyToken, TokenFamiliesRepo } from "../../src/iam/store/TokenFamiliesRepo.js"
import { TwoStepRepo } from "../../src/iam/store/TwoStepRepo.js"
import { OAuthFlowsRepo } from "../../src/iam/store/OAuthFlowsRepo.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../support/TestDatabase.js"
import { testConfig } from "../support/TestServer.js"
import { iamTestEnv } from "./support/IamTestServer.js"

/**
 * One contract, run against the SQL repos on a migrated database and against the in-memory Test repos, so
 * the services' tests over the Test repos stand for what production does. The layer (and its rows) is shared
 * by the tests of one run: each test uses names of its own and compares ids relative to each other.
 */
const config = testConfig(iamTestEnv())

type Repos = AccountsRepo | RolesRepo | LoginThrottleRepo | TokenFamiliesRepo | RevocationsRepo | TwoStepRepo | OAuthFlowsRepo

const Live: Layer.Layer<Repos> = Layer.mergeAll(
  AccountsRepo.Default,
  RolesRepo.Default,
  LoginThrottleRepo.Default,
  TokenFamiliesRepo.Default,
  RevocationsRepo.Default,
  TwoStepRepo.Default,
  OAuthFlowsRepo.Default
).pipe(
  Layer.provide(IamSql.layer),
  Layer.provide(Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))),
  Layer.provide(configLayer(config)),
  Layer.provide(TestDatabase),
  Layer.orDie
)

const InMemory: Layer.Layer<Repos> = Layer.mergeAll(
  RolesRepo.Test.pipe(Layer.provideMerge(AccountsRepo.Test)),
  LoginThrottleRepo.Test,
  TokenFamiliesRepo.Test,
  RevocationsRepo.Test,
  TwoStepRepo.Test,
  OAuthFlowsRepo.Test
)

const failure = <A>(effect: Effect.Effect<A, IamError>) => Effect.map(Effect.flip(effect), ({ code, message }) => ({ code, message }))

const user = (name: string) => ({ username: name, email: `${name}@example.com`, passwordHash: "$2a$04$not-a-real-hash" })

const T0 = Date.UTC(2030, 0, 1)
const at = (seconds: number) => new Date(T0 + seconds * 1000)

/** A refresh token of `family` issued at T0 and living an hour, unless `fields` say otherwise. */
const familyToken = (userId: number, family: string, fields: Partial<NewFamilyToken> = {}): NewFamilyToken => ({
  jti: randomUUID(),
  family,
  userId,
  parent: null,
  issuedAt: at(0),
  expiresAt: at(3600),
  sessionEndsAt: null,
  ...fields
})

const contract = (name: string, repos: Layer.Layer<Repos>) =>
  layer(repos, { timeout: 60_000 })(`${name}: repo contract`, (it) => {
    it.effect("users: found by username, email and id; username unique whatever its case, email unique", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const ann = yield* accounts.insert(user("ann"))
        expect(ann).toMatchObject({ username: "ann", email: "ann@example.com", passwordHash: user("ann").passwordHash })
        expect(ann.createdAt).toBeInstanceOf(Date)
        expect((yield* accounts.findByUsername("ann"))?.id).toBe(ann.id)
        expect((yield* accounts.findByEmail("ann@example.com"))?.id).toBe(ann.id)
        expect((yield* accounts.findById(ann.id))?.username).toBe("ann")
        expect(yield* accounts.findByUsername("nobody")).toBeUndefined()
        expect(yield* accounts.findById(ann.id + 1000)).toBeUndefined()

        const taken = { code: "already_exists", message: TAKEN }
        expect(yield* failure(accounts.insert({ ...user("ann"), email: "other@example.com" }))).toEqual(taken)
        expect(yield* failure(accounts.insert({ ...user("ann2"), email: "ann@example.com" }))).toEqual(taken)
        expect(yield* failure(accounts.insert({ ...user("ann3"), email: "no-at-sign" })))
          .toEqual({ code: "invalid_argument", message: EMAIL_WITHOUT_AT })
        // Usernames: unique and found whatever their case, kept as typed.
        expect(yield* failure(accounts.insert({ ...user("ANN"), email: "ann-upper@example.com" }))).toEqual(taken)
        expect((yield* accounts.findByUsername("ANN"))?.id).toBe(ann.id)
        const mixed = yield* accounts.insert(user("MiXeD"))
        expect((yield* accounts.findByUsername("mixed"))).toMatchObject({ id: mixed.id, username: "MiXeD" })
      }))

    it.effect("ids are allocated like serials: a failed insert spends one", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const roles = yield* RolesRepo
        const first = yield* accounts.insert(user("serial1"))
        yield* Effect.flip(accounts.insert(user("serial1")))
        expect((yield* accounts.insert(user("serial2"))).id).toBe(first.id + 2)

        const role = yield* roles.createRole("serial-role", null)
        yield* Effect.flip(roles.createRole("serial-role", null))
        // ON CONFLICT DO NOTHING evaluates the default, so an existing role spends an id too.
        expect(yield* roles.ensureRole("serial-role", "ignored")).toBe(role.id)
        expect((yield* roles.createRole("serial-role2", null)).id).toBe(role.id + 3)
      }))

    it.effect("roles and permissions: names unique, listed by id", () =>
      Effect.gen(function*() {
        const roles = yield* RolesRepo
        const editor = yield* roles.createRole("editor", "edits")
        expect(editor).toMatchObject({ name: "editor", description: "edits" })
        expect(yield* failure(roles.createRole("editor", null))).toEqual({ code: "already_exists", message: ROLE_NAME_TAKEN })
        const created = yield* roles.ensureRole("ensured", "made by ensureRole")
        expect(yield* roles.ensureRole("ensured", "again")).toBe(created)
        const listed = yield* roles.listRoles
        expect(listed.map((r) => r.id)).toEqual([...listed.map((r) => r.id)].sort((a, b) => a - b))
        expect(listed.find((r) => r.id === created)).toMatchObject({ name: "ensured", description: "made by ensureRole" })

        const read = yield* roles.createPermission({ name: "read orders", description: null, resource: "ORDER", action: "READ" })
        expect(read).toMatchObject({ name: "read orders", description: null, resource: "ORDER", action: "READ" })
        expect(yield* failure(roles.createPermission({ name: "read orders", description: null, resource: "USER", action: "LIST" })))
          .toEqual({ code: "already_exists", message: PERMISSION_NAME_TAKEN })
        expect((yield* roles.listPermissions).map((p) => p.name)).toContain("read orders")
      }))

    it.effect("links: to a missing row NOT_FOUND, twice is once, unlinking a missing link succeeds", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const roles = yield* RolesRepo
        const bob = yield* accounts.insert(user("bob"))
        const role = yield* roles.createRole("links-b", null)
        const other = yield* roles.createRole("links-a", null)
        const permission = yield* roles.createPermission({ name: "links", description: null, resource: "USER", action: "READ" })
        const dangles = { code: "not_found", message: ASSIGNMENT_DANGLES }
        expect(yield* failure(roles.assign(bob.id + 1000, role.id))).toEqual(dangles)
        expect(yield* failure(roles.assign(bob.id, role.id + 1000))).toEqual(dangles)
        expect(yield* failure(roles.grant(role.id, permission.id + 1000))).toEqual({ code: "not_found", message: GRANT_DANGLES })
        expect(yield* failure(roles.grant(role.id + 1000, permission.id))).toEqual({ code: "not_found", message: GRANT_DANGLES })

        yield* roles.assign(bob.id, role.id)
        yield* roles.assign(bob.id, role.id)
        yield* roles.assign(bob.id, other.id)
        yield* roles.grant(role.id, permission.id)
        yield* roles.grant(role.id, permission.id)
        yield* roles.unassign(bob.id + 1000, role.id)
        yield* roles.revoke(other.id, permission.id)

        expect((yield* roles.rolesOf(bob.id)).map((r) => r.id)).toEqual([role.id, other.id])
        expect(yield* roles.roleNamesOf(bob.id)).toEqual(["links-a", "links-b"])
        expect((yield* roles.permissionsOf(role.id)).map((p) => p.id)).toEqual([permission.id])
        expect(yield* roles.grants).toContainEqual({ role: "links-b", resource: "USER", action: "READ" })
        expect((yield* roles.assignments).filter((a) => a.userId === bob.id)).toHaveLength(2)
        expect(yield* roles.userExists(bob.id)).toBe(true)
        expect(yield* roles.userExists(bob.id + 1000)).toBe(false)
        expect(yield* roles.roleExists(role.id)).toBe(true)

        yield* roles.unassign(bob.id, other.id)
        expect(yield* roles.roleNamesOf(bob.id)).toEqual(["links-b"])
      }))

    it.effect("deleting a role or a permission deletes its links; deleting a missing one reports it", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const roles = yield* RolesRepo
        const cat = yield* accounts.insert(user("cat"))
        const role = yield* roles.createRole("doomed", null)
        const kept = yield* roles.createRole("kept", null)
        const permission = yield* roles.createPermission({ name: "doomed permission", description: null, resource: "TOKEN", action: "CREATE" })
        yield* roles.assign(cat.id, role.id)
        yield* roles.grant(role.id, permission.id)
        yield* roles.grant(kept.id, permission.id)

        expect(yield* roles.deleteRole(role.id)).toBe(true)
        expect(yield* roles.deleteRole(role.id)).toBe(false)
        expect(yield* roles.roleExists(role.id)).toBe(false)
        expect(yield* roles.rolesOf(cat.id)).toEqual([])
        expect((yield* roles.assignments).filter((a) => a.role === "doomed")).toEqual([])
        expect((yield* roles.grants).filter((g) => g.role === "doomed")).toEqual([])

        expect(yield* roles.deletePermission(permission.id)).toBe(true)
        expect(yield* roles.deletePermission(permission.id)).toBe(false)
        expect(yield* roles.permissionsOf(kept.id)).toEqual([])
      }))

    it.effect("a role's holders and name (lockRole) and a permission by id: what the last-admin and delegation rules read", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const roles = yield* RolesRepo
        const [dan, eve] = [yield* accounts.insert(user("dan")), yield* accounts.insert(user("eve"))]
        const role = yield* roles.createRole("holders", null)
        expect(yield* roles.holdersOf(role.id)).toEqual([])
        yield* roles.assign(eve.id, role.id)
        yield* roles.assign(dan.id, role.id)
        expect(yield* roles.holdersOf(role.id)).toEqual([dan.id, eve.id])
        expect(yield* roles.lockRole(role.id)).toBe("holders")
        expect(yield* roles.lockRole(role.id + 1000)).toBeUndefined()
        yield* roles.unassign(dan.id, role.id)
        expect(yield* roles.holdersOf(role.id)).toEqual([eve.id])

        const permission = yield* roles.createPermission({ name: "find me", description: "found", resource: "PRODUCT", action: "LIST" })
        expect(yield* roles.findPermission(permission.id)).toEqual(permission)
        expect(yield* roles.findPermission(permission.id + 1000)).toBeUndefined()
      }))

    it.effect("login failures: each attempt decided and recorded as admitLogin says, a success forgets them, many at once admit only the free ones", () =>
      Effect.gen(function*() {
        const throttle = yield* LoginThrottleRepo
        const backoff = { after: 3, firstMs: 1_000, maxMs: 8_000, forgetAfterMs: 60_000 }
        // Failing attempts at these moments (ms), each decided by the repo and by the pure rule over the same record.
        const times = [0, 0, 0, 0, 999, 1_000, 1_000, 2_999, 3_000, 7_000, 15_000, 30_000, 31_000, 100_000, 170_000]
        let count: FailureCount | undefined
        const base = 1_700_000_000_000
        for (const t of times) {
          const expected = admitLogin(count, base + t, backoff)
          if (expected.allowed) count = expected.count
          expect(yield* throttle.admitAccount("user:contract", base + t, backoff), `at ${t}`).toEqual(expected)
        }
        // Forgotten by a success: the next failures are free again.
        yield* throttle.clearAccount("user:contract")
        expect(yield* throttle.admitAccount("user:contract", base + 170_001, backoff)).toEqual(admitLogin(undefined, base + 170_001, backoff))

        // Twenty guesses at one instant, on one account: the three free ones go through.
        const guesses = yield* Effect.all(Array.from({ length: 20 }, () => throttle.admitAccount("user:burst", base, backoff)), { concurrency: "unbounded" })
        expect(guesses.filter((g) => g.allowed)).toHaveLength(3)
        expect(guesses.filter((g) => !g.allowed).every((g) => !g.allowed && g.retryAfterMs === 1_000)).toBe(true)
      }))

    it.effect("login clients: a bucket of failures as admitRequest keeps it, refunded by a success; the sweep removes only what decides nothing", () =>
      Effect.gen(function*() {
        const throttle = yield* LoginThrottleRepo
        const rate = requestRate(3, Duration.seconds(30), 3)
        const base = 1_700_000_000_000
        const admissions = yield* Effect.forEach([0, 0, 0, 0], (t) => throttle.admitClient("203.0.113.1", base + t, rate))
        expect(admissions.map((a) => a.allowed)).toEqual([true, true, true, false])
        expect(admissions[3]).toEqual({ allowed: false, retryAfterMs: 10_000 })
        // A success gives its failure back: one more attempt at once.
        yield* throttle.refundClient("203.0.113.1", rate)
        expect((yield* throttle.admitClient("203.0.113.1", base, rate)).allowed).toBe(true)
        expect((yield* throttle.admitClient("203.0.113.1", base, rate)).allowed).toBe(false)
        expect((yield* throttle.admitClient("203.0.113.1", base + 10_000, rate)).allowed).toBe(true)
        // Refunding a client never seen changes nothing.
        yield* throttle.refundClient("198.51.100.7", rate)
        expect((yield* Effect.forEach([0, 0, 0, 0], () => throttle.admitClient("198.51.100.7", base, rate))).map((a) => a.allowed))
          .toEqual([true, true, true, false])

        // Sweeping at base + 40 s: the clients' buckets are full again by then (deleted); the account waits until
        // base + 1 s and is forgotten a minute after that (kept).
        const backoff = { after: 1, firstMs: 1_000, maxMs: 1_000, forgetAfterMs: 60_000 }
        yield* throttle.admitAccount("user:sweep", base, backoff)
        const swept = yield* throttle.sweep(base + 40_000, backoff)
        expect(swept).toBeGreaterThanOrEqual(2)
        expect(yield* throttle.admitAccount("user:sweep", base + 500, backoff)).toEqual({ allowed: false, retryAfterMs: 500 })
        expect(yield* throttle.sweep(base + 61_001, backoff)).toBeGreaterThanOrEqual(1)
        expect(yield* throttle.admitAccount("user:sweep", base + 61_001, backoff)).toEqual(admitLogin(undefined, base + 61_001, backoff))
      }))

    it.effect("refresh tokens: read back as written; a spent one comes with its child; revoking a family keeps earlier revocations' times", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const families = yield* TokenFamiliesRepo
        const fay = yield* accounts.insert(user("fay"))
        const [one, two] = [randomUUID(), randomUUID()]
        const first = familyToken(fay.id, one)
        const ending = familyToken(fay.id, two, { sessionEndsAt: at(1800), expiresAt: at(1800) })
        yield* families.insert(first)
        yield* families.insert(ending)
        const fresh = { spentAt: null, revokedAt: null }
        expect(yield* families.lockForRefresh(first.jti)).toEqual({ token: { ...first, ...fresh }, child: undefined })
        expect(yield* families.lockForRefresh(ending.jti)).toEqual({ token: { ...ending, ...fresh }, child: undefined })
        expect(yield* families.lockForRefresh(randomUUID())).toBeUndefined()

        // A rotation: the token spent, its child in the same family.
        const child = familyToken(fay.id, one, { parent: first.jti, issuedAt: at(60), expiresAt: at(3660) })
        yield* families.spend(first.jti, at(60))
        yield* families.insert(child)
        expect(yield* families.lockForRefresh(first.jti))
          .toEqual({ token: { ...first, spentAt: at(60), revokedAt: null }, child: { ...child, ...fresh } })
        expect((yield* families.lockForRefresh(child.jti))?.child).toBeUndefined()

        yield* families.revokeFamilies([], at(90))
        yield* families.revokeFamilies([one], at(120))
        expect((yield* families.lockForRefresh(first.jti))?.token.revokedAt).toEqual(at(120))
        expect((yield* families.lockForRefresh(child.jti))?.token.revokedAt).toEqual(at(120))
        expect((yield* families.lockForRefresh(ending.jti))?.token.revokedAt).toBeNull()
        yield* families.revokeFamilies([one, two], at(180))
        expect((yield* families.lockForRefresh(child.jti))?.token.revokedAt).toEqual(at(120))
        expect((yield* families.lockForRefresh(ending.jti))?.token.revokedAt).toEqual(at(180))
      }))

    it.effect("open families: a user's families with a token neither revoked nor expired, each once", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const families = yield* TokenFamiliesRepo
        const [gus, hal] = [yield* accounts.insert(user("gus")), yield* accounts.insert(user("hal"))]
        const [rotated, expired, revoked, others] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()]
        const spent = familyToken(gus.id, rotated)
        yield* families.insert(spent)
        yield* families.spend(spent.jti, at(10))
        yield* families.insert(familyToken(gus.id, rotated, { parent: spent.jti, issuedAt: at(10) }))
        yield* families.insert(familyToken(gus.id, expired, { expiresAt: at(100) }))
        yield* families.insert(familyToken(gus.id, revoked))
        yield* families.revokeFamilies([revoked], at(20))
        yield* families.insert(familyToken(hal.id, others))

        expect(yield* families.openFamiliesOf(gus.id, at(99))).toEqual(expect.arrayContaining([rotated, expired]))
        expect((yield* families.openFamiliesOf(gus.id, at(99))).length).toBe(2)
        // A token expiring at the very moment is no longer open.
        expect(yield* families.openFamiliesOf(gus.id, at(100))).toEqual([rotated])
        expect(yield* families.openFamiliesOf(hal.id, at(100))).toEqual([others])
        expect(yield* families.openFamiliesOf(gus.id, at(3600))).toEqual([])
      }))

    it.effect("revocations: an id is recorded once (the first expiry stays); unexpired lists those in force at the moment", () =>
      Effect.gen(function*() {
        const revocations = yield* RevocationsRepo
        const ids: ReadonlyArray<string> = [randomUUID(), randomUUID(), randomUUID()]
        const [access, family, late] = ids as [string, string, string]
        yield* revocations.record([])
        yield* revocations.record([{ id: access, kind: "access", expiresAt: at(60) }, { id: family, kind: "family", expiresAt: at(600) }])
        yield* revocations.record([{ id: access, kind: "access", expiresAt: at(6000) }, { id: late, kind: "family", expiresAt: at(6000) }])
        const mine = (moment: Date) =>
          Effect.map(revocations.unexpired(moment), (rows) =>
            rows.filter((r) => ids.includes(r.id)).sort((a, b) => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : 1)))
        expect(yield* mine(at(0))).toEqual([
          { id: access, expiresAt: at(60).getTime() },
          { id: family, expiresAt: at(600).getTime() },
          { id: late, expiresAt: at(6000).getTime() }
        ])
        // In force through the very moment it expires (a token is valid until the clock is past its exp).
        expect((yield* mine(at(60))).map((r) => r.id)).toEqual([access, family, late])
        expect(yield* mine(new Date(at(60).getTime() + 1))).toEqual([{ id: family, expiresAt: at(600).getTime() }, { id: late, expiresAt: at(6000).getTime() }])
        expect(yield* mine(new Date(at(6000).getTime() + 1))).toEqual([])
      }))

    it.effect("TOTP factors: a pending one is replaced, an active one is not; accepting and failing write what they say; removal takes the tickets", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const repo = yield* TwoStepRepo
        const { id } = yield* accounts.insert(user(`totp-${name.replace(/\W+/g, "")}`))
        expect(yield* repo.findFactor(id)).toBeUndefined()
        expect(yield* repo.putPending(id, "FIRSTSECRET", at(0))).toBe(true)
        yield* repo.recordFailures(id, 2, at(1))
        expect(yield* repo.putPending(id, "SECONDSECRET", at(2))).toBe(true)
        const pending = yield* repo.lockFactor(id)
        expect(pending).toMatchObject({ userId: id, secret: "SECONDSECRET", failures: { count: 0, since: undefined } })
        expect(Option.isNone(pending!.verifiedAt) && Option.isNone(pending!.lastStep)).toBe(true)

        yield* repo.recordFailures(id, 3, at(3))
        yield* repo.accept(id, 1_000, at(4))
        const active = yield* repo.findFactor(id)
        expect(active).toMatchObject({ secret: "SECONDSECRET", failures: { count: 0, since: undefined } })
        expect([active!.verifiedAt, active!.lastStep]).toStrictEqual([Option.some(at(4)), Option.some(1_000)])
        expect(yield* repo.putPending(id, "THIRDSECRET", at(5))).toBe(false)
        expect((yield* repo.findFactor(id))!.secret).toBe("SECONDSECRET")
        yield* repo.accept(id, 1_001, undefined)
        expect((yield* repo.findFactor(id))!.verifiedAt).toStrictEqual(Option.some(at(4)))
        expect((yield* repo.findFactor(id))!.lastStep).toStrictEqual(Option.some(1_001))

        yield* repo.insertTicket(`digest-${id}`, id, at(300))
        expect(yield* repo.removeFactor(id)).toBe(true)
        expect(yield* repo.findFactor(id)).toBeUndefined()
        expect(yield* repo.lockTicket(`digest-${id}`)).toBeUndefined()
        expect(yield* repo.removeFactor(id)).toBe(false)
      }))

    it.effect("login tickets: read back as written, failures counted, deleted one by one or swept once expired", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountsRepo
        const repo = yield* TwoStepRepo
        const { id } = yield* accounts.insert(user(`ticket-${name.replace(/\W+/g, "")}`))
        const [early, late] = [`early-${id}`, `late-${id}`]
        yield* repo.insertTicket(early, id, at(60))
        yield* repo.insertTicket(late, id, at(600))
        expect(yield* repo.lockTicket(early)).toStrictEqual({ userId: id, expiresAt: at(60), failures: 0 })
        yield* repo.countTicketFailure(early)
        yield* repo.countTicketFailure(early)
        expect((yield* repo.lockTicket(early))!.failures).toBe(2)
        // Expired at 60 s is still there at 60 s (the instant itself is good), gone when swept after it.
        yield* repo.sweepTickets(at(60))
        expect(yield* repo.lockTicket(early)).toBeDefined()
        yield* repo.sweepTickets(at(61))
        expect(yield* repo.lockTicket(early)).toBeUndefined()
        expect(yield* repo.lockTicket(late)).toBeDefined()
        yield* repo.deleteTicket(late)
        expect(yield* repo.lockTicket(late)).toBeUndefined()
      }))

    it.effect("OAuth flows: taken once (the take deletes), swept once expired; a link flow keeps its account", () =>
      Effect.gen(function*() {
        const repo = yield* OAuthFlowsRepo
        const tag = name.replace(/\W+/g, "")
        const linker = yield* (yield* AccountsRepo).insert(user(`flow-linker-${tag}`))
        const [early, late, bare, link] = [`early-${tag}`, `late-${tag}`, `bare-${tag}`, `link-${tag}`]
        yield* repo.insert(early, { provider: "keycloak", codeVerifier: "verifier-1", expiresAt: at(60), linkUserId: null })
        yield* repo.insert(late, { provider: "github", codeVerifier: "verifier-2", expiresAt: at(600), linkUserId: null })
        yield* repo.insert(bare, { provider: "notion", codeVerifier: null, expiresAt: at(600), linkUserId: null })
        yield* repo.insert(link, { provider: "keycloak", codeVerifier: "verifier-3", expiresAt: at(600), linkUserId: linker.id })
        expect(yield* repo.take(bare)).toStrictEqual({ provider: "notion", codeVerifier: null, expiresAt: at(600), linkUserId: null })
        expect(yield* repo.take(bare)).toBeUndefined()
        expect(yield* repo.take(link)).toStrictEqual({ provider: "keycloak", codeVerifier: "verifier-3", expiresAt: at(600), linkUserId: linker.id })
        // Swept after its expiry, a flow is gone; a later one stays.
        yield* repo.sweep(at(60))
        yield* repo.sweep(at(61))
        expect(yield* repo.take(early)).toBeUndefined()
        expect(yield* repo.take(late)).toStrictEqual({ provider: "github", codeVerifier: "verifier-2", expiresAt: at(600), linkUserId: null })
        expect(yield* repo.take(late)).toBeUndefined()
      }))

    it.effect("OAuth links: the first account to link a provider identity holds it; per provider and subject", () =>
      Effect.gen(function*() {
        const repo = yield* OAuthFlowsRepo
        const accounts = yield* AccountsRepo
        const tag = name.replace(/\W+/g, "")
        const ann = yield* accounts.insert(user(`link-ann-${tag}`))
        const bob = yield* accounts.insert(user(`link-bob-${tag}`))
        const subject = `sub-${tag}`
        expect(yield* repo.linkedUser("keycloak", subject)).toBeUndefined()
        expect(yield* repo.link("keycloak", subject, ann.id, at(0))).toBe(ann.id)
        expect(yield* repo.link("keycloak", subject, ann.id, at(1))).toBe(ann.id)
        // Held: another account's link answers the holder and changes nothing.
        expect(yield* repo.link("keycloak", subject, bob.id, at(2))).toBe(ann.id)
        expect(yield* repo.linkedUser("keycloak", subject)).toBe(ann.id)
        // The same subject at another provider is another identity.
        expect(yield* repo.linkedUser("github", subject)).toBeUndefined()
        expect(yield* repo.link("github", subject, bob.id, at(3))).toBe(bob.id)
        expect(yield* repo.linkedUser("github", subject)).toBe(bob.id)
      }))

    it.effect("the policy version moves by one on every bump", () =>
      Effect.gen(function*() {
        const roles = yield* RolesRepo
        const before = Number(yield* roles.policyVersion)
        yield* roles.bumpPolicyVersion
        yield* roles.bumpPolicyVersion
        expect(Number(yield* roles.policyVersion)).toBe(before + 2)
      }))
  })

contract("SQL (Live)", Live)
contract("in memory (Test)", InMemory)
