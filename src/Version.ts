import { readFileSync } from "node:fs"
import { join } from "node:path"
import { PACKAGE_ROOT } from "./platform/PackageRoot.js"

const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }

/** The running build's version, from package.json. */
export const VERSION: string = manifest.version
