#!/usr/bin/env node
/**
 * The production build (`npm run build`; `npm start` through build-if-stale.mjs): esbuild bundles src/main.ts and what
 * it imports, node_modules included, into dist/main.js and chunks under dist/chunks/, split at every dynamic import so
 * that what the program loads on first use (the IAM service, SAML, the embedded database's driver, telemetry, ...) is
 * still loaded only then. Types are not checked here: `npm run typecheck` (and `npm test`) does that.
 *
 * Why a bundle: a process holds the source of every module it loads, and each module's records and wrappers. One file
 * per module, as tsc writes them, with whole packages behind their entry points, cost each worker about 25 MB and the
 * primary about 10 MB more than the bundle, whose tree shaking leaves out what no path reaches
 * (docs/plans/issue-30-memory.md). Not minified: stack traces keep their names and lines.
 *
 * Left outside the bundle, loaded from node_modules at run time: native addons (@node-rs/bcrypt), packages that read
 * files beside their own code (PGlite's WebAssembly and extensions), what the program itself requires lazily
 * (node-saml, xmldom), the OpenTelemetry SDK (loaded only when telemetry is on, and whose instrumentation hooks the
 * module loader) with the grpc-js its exporters share with the program, packages that find files beside their own
 * code (grpc-js' protos, msgpackr's native extractor), CommonJS packages the program imports on first use (qrcode:
 * see dynamicCommonJs), and optional peers that are never installed. None of them imports effect: the bundle must
 * hold the only copy of effect, whose services are matched by identity.
 *
 * dist/bundle-modules.json says which modules each output file holds ("gatehouse:<path>.js" for the program's own,
 * package names for the rest): test/cli/ModuleCensus.test.ts reads what a process loaded through it.
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const EXTERNAL = [
  "@node-rs/bcrypt",
  "@electric-sql/pglite",
  "@electric-sql/pglite/*",
  "@electric-sql/pglite-socket",
  "@node-saml/node-saml",
  "@xmldom/xmldom",
  "@opentelemetry/*",
  // The OpenTelemetry gRPC exporters take the program's Metadata: one copy of grpc-js for both, and its protos.
  "@grpc/grpc-js",
  "@grpc/proto-loader",
  "qrcode",
  // msgpackr requires its native extractor relative to its own file.
  "msgpackr-extract",
  "pg-native",
  "bufferutil",
  "utf-8-validate"
]

/** A module of the bundle by the name the census uses: a package's name, or the program's own file as tsc names it. */
const moduleName = (input) => {
  const modules = input.lastIndexOf("node_modules/")
  if (modules >= 0) {
    const [scope, name] = input.slice(modules + "node_modules/".length).split("/")
    return scope.startsWith("@") ? `${scope}/${name}` : scope
  }
  return input.startsWith("src/") ? `gatehouse:${input.slice("src/".length).replace(/\.ts$/, ".js")}` : input
}

/**
 * Dynamic imports that resolve to a CommonJS module inside the bundle. esbuild puts such a module in a chunk of its
 * own that exports only `default` (module.exports), where Node's loader also gives the named exports it finds in the
 * source: `const { toString } = await import("qrcode")` works from node_modules and gets undefined from the bundle.
 * Such a package belongs in EXTERNAL; the build refuses to write one into the bundle.
 */
const dynamicCommonJs = (metafile) =>
  Object.entries(metafile.inputs).flatMap(([importer, input]) =>
    input.imports
      .filter((imported) => imported.kind === "dynamic-import" && imported.external !== true && metafile.inputs[imported.path]?.format === "cjs")
      .map((imported) => `${importer} imports ${imported.original ?? imported.path} (${imported.path}), a CommonJS module, on first use`))

/**
 * Output files that name `__dirname` or `__filename`: a CommonJS package that finds files beside its own code. In an
 * ES module neither exists (a ReferenceError when that code runs), and beside the bundle's chunk the files would not
 * be there anyway. Such a package belongs in EXTERNAL.
 */
const pathsOfCommonJs = (root, outputs) =>
  outputs.filter((file) => file.path.endsWith(".js") && /\b__(dirname|filename)\b/.test(file.text))
    .map((file) => `${relative(root, file.path)} uses __dirname or __filename`)

/** Builds dist/ from src/. */
export const bundle = async (root) => {
  const startedAt = new Date()
  const { build } = await import("esbuild")
  const dist = join(root, "dist")
  const result = await build({
    absWorkingDir: root,
    entryPoints: ["src/main.ts"],
    outdir: "dist",
    entryNames: "[name]",
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: true,
    tsconfig: "tsconfig.json",
    external: EXTERNAL,
    // CommonJS packages in the bundle call require() for Node's own modules; an ES module has none of its own.
    banner: { js: "import { createRequire as __gatehouseCreateRequire } from \"node:module\"; const require = __gatehouseCreateRequire(import.meta.url);" },
    metafile: true,
    // Kept in memory until the checks below pass, then written.
    write: false,
    logLevel: "warning"
  })
  const refused = [...dynamicCommonJs(result.metafile), ...pathsOfCommonJs(root, result.outputFiles)]
  if (refused.length > 0) {
    process.stderr.write(`${refused.join("\n")}\nadd each such package to EXTERNAL in scripts/bundle.mjs (nothing was written)\n`)
    throw new Error("the bundle would hold CommonJS code that cannot run from it")
  }
  // Emptied first, so nothing from an older build lingers.
  rmSync(dist, { recursive: true, force: true })
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true })
    writeFileSync(file.path, file.contents)
  }
  const modules = Object.fromEntries(
    Object.entries(result.metafile.outputs)
      .filter(([file]) => file.endsWith(".js"))
      .map(([file, output]) => [relative("dist", file), [...new Set(Object.keys(output.inputs).map(moduleName))].sort()])
  )
  writeFileSync(join(dist, "bundle-modules.json"), `${JSON.stringify(modules, null, 1)}\n`)
  // build-if-stale.mjs compares its inputs with this stamp; it takes the time the build started, so a file saved
  // during the build makes the next start build again.
  const stamp = join(dist, ".build-stamp")
  writeFileSync(stamp, "")
  utimesSync(stamp, startedAt, startedAt)
  return (Date.now() - startedAt.getTime()) / 1000
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const seconds = await bundle(join(dirname(fileURLToPath(import.meta.url)), ".."))
    process.stderr.write(`built dist/ in ${seconds.toFixed(1)} s\n`)
  } catch (error) {
    // esbuild has printed what it could not read; anything else is said here.
    if (!Array.isArray(error?.errors)) process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
