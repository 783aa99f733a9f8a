import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, normalize, relative, sep } from "node:path"

/**
 * The floor plan of src/ (README "Layout"), as data, and the rule that reads a tree against it. The rule is pure
 * over a map of files (path relative to src/ → source text), so a test can plant a violation in a copy of the real
 * tree and see it caught.
 *
 * Floors, bottom up: an import may go down a floor or stay on its own, never up.
 *   0  domain/ (shared pure rules), gen/ (generated), Package.ts
 *   1  config/
 *   2  platform/
 *   3  auth/ and iam/, which never import each other
 *   4  cli/
 *   5  main.ts
 * Inside a product, its folders are features, floors or edges. A feature imports floors, never another feature; a
 * floor imports floors, never a feature; `domain/` imports only domain folders. An edge (a transport: IAM's gRPC,
 * REST and RPC adapters) may import anything in its product, and only the composition imports it. The product's own
 * top files are its composition (they may import anything in the product) unless listed as ground files, which
 * anything in the product may import.
 */
export interface ProductPlan {
  readonly features: ReadonlyArray<string>
  readonly floors: ReadonlyArray<string>
  readonly edges: ReadonlyArray<string>
  /** Top-level files of the product that sit on a floor (contracts, table names), not on the composition. */
  readonly groundFiles: ReadonlyArray<string>
}

export interface LayoutPlan {
  /** First path segment under src/ → its floor number. */
  readonly levels: Readonly<Record<string, number>>
  readonly products: Readonly<Record<string, ProductPlan>>
  /** Packages a domain file may import; anything else (a driver, a transport, node:fs) is not a pure rule. */
  readonly domainPackages: ReadonlyArray<string>
}

export const PLAN: LayoutPlan = {
  levels: { domain: 0, gen: 0, "Package.ts": 0, config: 1, platform: 2, auth: 3, iam: 3, cli: 4, "main.ts": 5 },
  products: {
    auth: {
      features: [
        "admin", "external", "invite", "landing", "logout", "mfa", "oauthserver", "otp", "passkeys", "profile", "recover", "resend",
        "settings", "signup", "sso", "token", "usersessions", "verify"
      ],
      floors: [
        "contract", "domain", "factors", "http", "limits", "messages", "metrics", "oauth", "sessions", "users", "webauthn"
      ],
      edges: [],
      groundFiles: ["AuthTables.ts"]
    },
    iam: {
      features: ["access", "oauth", "tokens", "twostep"],
      floors: ["accounts", "domain", "store"],
      edges: ["grpc", "rest", "rpc"],
      groundFiles: ["IamContract.ts", "IamSql.ts", "JsonInputProblem.ts", "ProtoEnums.ts"]
    }
  },
  // The noble and scure libraries are pure arithmetic and encodings (no I/O): the Web3 signature rules use them.
  // The peculiar ASN.1 schemas are encodings too: the SAML SP certificate is built with them. otplib is HMAC over
  // those same noble and scure libraries: the TOTP rule (domain/Totp) both products verify codes with.
  domainPackages: [
    "effect", "@effect/platform", "node:crypto", "node:url", "@noble/curves/ed25519.js", "@noble/curves/secp256k1.js",
    "@noble/hashes/sha3.js", "@scure/base", "@peculiar/asn1-schema", "@peculiar/asn1-x509", "otplib", "negotiator"
  ]
}

export type SourceTree = ReadonlyMap<string, string>

/** Every .ts file under `root`, by its path relative to `root` (with "/" separators). */
export const readTree = (root: string): SourceTree => {
  const files = new Map<string, string>()
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (path.endsWith(".ts")) files.set(relative(root, path).split(sep).join("/"), readFileSync(path, "utf8"))
    }
  }
  walk(root)
  return files
}

const IMPORT = /(import|export)\s+(type\s+)?(?:[^"';]*?\sfrom\s*)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g

interface ImportEdge {
  readonly specifier: string
  /** Only types: erased at run time. */
  readonly typeOnly: boolean
}

export const importsOf = (source: string): ReadonlyArray<ImportEdge> =>
  [...source.matchAll(IMPORT)].map((m) => ({ specifier: m[3] ?? m[4]!, typeOnly: m[2] !== undefined }))

/** A relative specifier ("../x/Y.js") resolved against the importing file, as a path relative to src/ ending .ts. */
const resolveSpecifier = (from: string, specifier: string): string =>
  normalize(join(dirname(from), specifier)).split(sep).join("/").replace(/\.js$/, ".ts")

const isDomain = (path: string): boolean => path.startsWith("domain/") || /^(auth|iam)\/domain\//.test(path)

/** The part of a product a file lies in: a folder, or "top" for its own top-level files. */
const roomOf = (path: string): { readonly product: string; readonly room: string } | undefined => {
  const [product, second, third] = path.split("/")
  if (product === undefined || PLAN.products[product] === undefined || second === undefined) return undefined
  return { product, room: third === undefined ? (PLAN.products[product]!.groundFiles.includes(second) ? "ground" : "top") : second }
}

const kindOf = (plan: ProductPlan, room: string): "feature" | "floor" | "edge" | "ground" | "top" | "unknown" =>
  room === "top" || room === "ground" ? room
  : plan.features.includes(room) ? "feature"
  : plan.floors.includes(room) ? "floor"
  : plan.edges.includes(room) ? "edge"
  : "unknown"

// A package or any of its modules (@effect/sql/SqlClient, as imported module by module).
const SQL_PACKAGE = /^@effect\/sql(-pg|-pglite)?(\/|$)/

/** Packages whose index re-exports every module: imported module by module instead. */
const BARRELS: ReadonlyArray<string> = ["@effect/platform", "@effect/platform-node", "@effect/sql", "@effect/sql-pg", "effect"]

/** The files allowed to draw randomness: the port, and the one exception the README names. */
export const RANDOMNESS_FILES: ReadonlyArray<string> = ["platform/SecureRandom.ts", "config/loadConfig.ts"]

// A draw from node:crypto or the Web Crypto API, or from Math.random.
const DRAWS_RANDOMNESS = /\b(randomBytes|randomUUID|randomInt|randomFill(Sync)?|getRandomValues|generateKeyPair(Sync)?)\b|Math\.random\b/

/** Every break of the plan in `tree`, as "file: why". Empty when the tree follows it. */
export const layoutViolations = (tree: SourceTree, plan: LayoutPlan = PLAN): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const [file, source] of tree) {
    const top = file.split("/")[0]!
    const level = plan.levels[top]
    if (level === undefined) {
      found.push(`${file}: src/${top} is on no floor of the plan`)
      continue
    }
    const here = roomOf(file)
    if (here !== undefined && kindOf(plan.products[here.product]!, here.room) === "unknown") {
      found.push(`${file}: ${here.product}/${here.room} is neither a feature, a floor nor an edge`)
    }
    // Running SQL is a repo's job (or the SQL plumbing's); naming SqlClient in a type, to compose layers, is not.
    const runsSql = importsOf(source).some((edge) => !edge.typeOnly && SQL_PACKAGE.test(edge.specifier))
    if (runsSql && !file.endsWith("Repo.ts") && !file.startsWith("platform/sql/")) {
      found.push(`${file}: imports SQL outside a *Repo.ts and platform/sql`)
    }
    if (!file.startsWith("gen/") && DRAWS_RANDOMNESS.test(source) && !RANDOMNESS_FILES.includes(file)) {
      found.push(`${file}: draws randomness outside platform/SecureRandom.ts`)
    }
    for (const edge of importsOf(source)) {
      if (!edge.specifier.startsWith(".")) {
        // A barrel loads every module of its package into every process (megabytes of Swagger and Scalar UI,
        // @effect/cluster; effect's hundred modules no process uses): scripts/deep-imports.mjs rewrites its imports
        // into one per module.
        if (BARRELS.includes(edge.specifier)) {
          found.push(`${file}: imports the ${edge.specifier} barrel; import each module (${edge.specifier}/<Module>)`)
        }
        // A module of an allowed package is allowed: @effect/platform/HttpApiSchema as @effect/platform.
        const allowed = plan.domainPackages.some((pkg) => edge.specifier === pkg || edge.specifier.startsWith(`${pkg}/`))
        if (isDomain(file) && !edge.typeOnly && !allowed) {
          found.push(`${file}: domain imports the package ${edge.specifier}`)
        }
        continue
      }
      const target = resolveSpecifier(file, edge.specifier)
      const targetTop = target.split("/")[0]!
      const targetLevel = plan.levels[targetTop]
      if (targetLevel === undefined) {
        found.push(`${file}: imports ${target}, outside src/ or on no floor`)
        continue
      }
      if (isDomain(file) && !isDomain(target)) {
        found.push(`${file}: domain imports ${target}`)
        continue
      }
      if (targetLevel > level) {
        found.push(`${file}: imports ${target}, a higher floor`)
        continue
      }
      if (targetLevel === level && top !== targetTop) {
        found.push(`${file}: imports ${target}, another product`)
        continue
      }
      const there = roomOf(target)
      if (here === undefined || there === undefined || here.room === there.room) continue
      const productPlan = plan.products[here.product]!
      const from = kindOf(productPlan, here.room)
      const to = kindOf(productPlan, there.room)
      if (from === "top" || from === "edge") continue
      if (to === "top") found.push(`${file}: imports ${target}, the product's composition`)
      else if (to === "edge") found.push(`${file}: imports ${target}, an edge only the composition may use`)
      else if (from === "feature" && to === "feature") found.push(`${file}: imports ${target}, another feature`)
      else if ((from === "floor" || from === "ground") && to === "feature") found.push(`${file}: imports ${target}, a feature above its floor`)
    }
  }
  return found
}
