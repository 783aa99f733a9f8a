// The module.register hooks of memory-census.mjs: each module URL loaded, one a line ("<url> <importer>"), appended to
// `file`.
import { appendFileSync } from "node:fs"

let file

export const initialize = (data) => {
  file = data.file
}

export const resolve = async (specifier, context, next) => {
  const resolved = await next(specifier, context)
  appendFileSync(file, `${resolved.url} ${context.parentURL ?? "-"}\n`)
  return resolved
}
