import { readFileSync } from "node:fs"

// src/ (tests) and dist/ (the build) both sit one level below the package root.
const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }

/** The running build's version, from package.json. */
export const VERSION: string = manifest.version
