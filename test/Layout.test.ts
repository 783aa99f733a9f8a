import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { importsOf, layoutViolations, readTree, type SourceTree } from "./support/LayoutPlan.js"

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), "../src")
const tree = readTree(SRC)

/** The real tree with one file added or replaced. */
const planted = (path: string, source: string): SourceTree => new Map([...tree, [path, source]])

/** What the plan says of `path` after planting it, beyond what it says of the real tree. */
const newViolations = (path: string, source: string): ReadonlyArray<string> =>
  layoutViolations(planted(path, source)).filter((line) => line.startsWith(`${path}:`))

describe("the layout of src/", () => {
  it("follows the floor plan: no sideways imports, no arrow up a floor, domain pure, SQL only in repos, randomness in SecureRandom", () => {
    expect(layoutViolations(tree)).toEqual([])
  })

  it("the scan sees the imports it judges", () => {
    expect(importsOf(tree.get("auth/sessions/Sessions.ts")!).map((edge) => edge.specifier)).toContain("../domain/RefreshRules.js")
  })

  it("catches a domain file importing the platform", () => {
    expect(newViolations("auth/domain/Planted.ts", `import { SecureRandom } from "../../platform/SecureRandom.js"\n`))
      .toEqual(["auth/domain/Planted.ts: domain imports platform/SecureRandom.ts"])
    expect(newViolations("domain/Planted.ts", `import { readFileSync } from "node:fs"\n`))
      .toEqual(["domain/Planted.ts: domain imports the package node:fs"])
  })

  it("catches one auth feature importing another", () => {
    expect(newViolations("auth/signup/Planted.ts", `import { Verify } from "../verify/Verify.js"\n`))
      .toEqual(["auth/signup/Planted.ts: imports auth/verify/Verify.ts, another feature"])
  })

  it("catches one IAM feature importing another", () => {
    expect(newViolations("iam/access/Planted.ts", `import { IamSessions } from "../tokens/IamSessions.js"\n`))
      .toEqual(["iam/access/Planted.ts: imports iam/tokens/IamSessions.ts, another feature"])
  })

  it("catches config importing the platform, and a floor importing a feature", () => {
    expect(newViolations("config/Planted.ts", `import { Cors } from "../platform/http/Cors.js"\n`))
      .toEqual(["config/Planted.ts: imports platform/http/Cors.ts, a higher floor"])
    expect(newViolations("auth/users/Planted.ts", `import type { Signup } from "../signup/Signup.js"\n`))
      .toEqual(["auth/users/Planted.ts: imports auth/signup/Signup.ts, a feature above its floor"])
  })

  it("catches a floor reaching into a transport edge", () => {
    expect(newViolations("iam/accounts/Planted.ts", `import { IamGrpcServerLive } from "../grpc/GrpcServer.js"\n`))
      .toEqual(["iam/accounts/Planted.ts: imports iam/grpc/GrpcServer.ts, an edge only the composition may use"])
  })

  it("catches one product importing the other", () => {
    expect(newViolations("iam/tokens/Planted.ts", `import { Users } from "../../auth/users/Users.js"\n`))
      .toEqual(["iam/tokens/Planted.ts: imports auth/users/Users.ts, another product"])
  })

  it("catches a feature running SQL itself", () => {
    expect(newViolations("auth/signup/Planted.ts", `import * as SqlClient from "@effect/sql/SqlClient"\n`))
      .toEqual(["auth/signup/Planted.ts: imports SQL outside a *Repo.ts and platform/sql"])
    expect(newViolations("auth/signup/Planted.ts", `import { SqlClient } from "@effect/sql"\n`)).toEqual([
      "auth/signup/Planted.ts: imports SQL outside a *Repo.ts and platform/sql",
      "auth/signup/Planted.ts: imports the @effect/sql barrel; import each module (@effect/sql/<Module>)"
    ])
  })

  it("catches randomness drawn outside SecureRandom", () => {
    expect(newViolations("auth/users/Planted.ts", `import { randomUUID } from "node:crypto"\nexport const id = () => randomUUID()\n`))
      .toEqual(["auth/users/Planted.ts: draws randomness outside platform/SecureRandom.ts"])
    expect(newViolations("iam/tokens/Planted.ts", `export const pick = () => Math.random()\n`))
      .toEqual(["iam/tokens/Planted.ts: draws randomness outside platform/SecureRandom.ts"])
  })

  it("catches an import of the effect, @effect/platform or @effect/platform-node barrel, and lets a domain file import a module of an allowed package", () => {
    expect(newViolations("platform/http/Planted.ts", `import { HttpServer } from "@effect/platform"\n`))
      .toEqual(["platform/http/Planted.ts: imports the @effect/platform barrel; import each module (@effect/platform/<Module>)"])
    expect(newViolations("cli/Planted.ts", `import { NodeRuntime } from "@effect/platform-node"\n`))
      .toEqual(["cli/Planted.ts: imports the @effect/platform-node barrel; import each module (@effect/platform-node/<Module>)"])
    expect(newViolations("platform/Planted.ts", `import { Effect, pipe } from "effect"\n`))
      .toEqual(["platform/Planted.ts: imports the effect barrel; import each module (effect/<Module>)"])
    expect(newViolations("platform/Planted.ts", `import * as Effect from "effect/Effect"\nimport { pipe } from "effect/Function"\n`)).toEqual([])
    expect(newViolations("platform/http/Planted.ts", `import * as HttpServer from "@effect/platform/HttpServer"\n`)).toEqual([])
    expect(newViolations("auth/domain/Planted.ts", `import * as HttpApiSchema from "@effect/platform/HttpApiSchema"\n`)).toEqual([])
  })

  it("catches a folder that is on no plan", () => {
    expect(newViolations("auth/mystery/Planted.ts", `export const x = 1\n`))
      .toEqual(["auth/mystery/Planted.ts: auth/mystery is neither a feature, a floor nor an edge"])
  })
})
