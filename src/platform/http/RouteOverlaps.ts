type JsonObject = Record<string, any>

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** The values a templated path (`/users/{id}`) gives its parameters at a concrete path, or undefined if it does not match. */
const matchTemplate = (template: string, path: string): Record<string, string> | undefined => {
  const want = template.split("/")
  const have = path.split("/")
  if (want.length !== have.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const name = /^\{(\w+)\}$/.exec(want[i]!)?.[1]
    if (name !== undefined) {
      if (have[i] === "") return undefined
      params[name] = have[i]!
    } else if (want[i] !== have[i]) return undefined
  }
  return params
}

/**
 * The routes a router serves at a fixed path through a parameter, added to an OpenAPI document under that path.
 * A router takes `/user/identities/authorize` with GET to its own route, and with DELETE to
 * `/user/identities/{identity_id}` (identity_id "authorize"); so the path has both methods, and its 405 lists both.
 * The document says so, the operation copied with the parameter fixed, so a client reading it sees what the server
 * answers (and what a 405's Allow header lists) at that path.
 */
export const documentRouteOverlaps = (spec: JsonObject): JsonObject => {
  const paths: JsonObject = { ...spec["paths"] }
  const templates = Object.keys(paths).filter((path) => path.includes("{"))
  for (const path of Object.keys(paths).filter((p) => !p.includes("{"))) {
    for (const template of templates) {
      const params = matchTemplate(template, path)
      if (params === undefined) continue
      for (const method of METHODS) {
        const operation = paths[template][method]
        if (operation === undefined || paths[path][method] !== undefined) continue
        const { links: _links, ...withoutLinks } = operation
        const fixed = Object.entries(params).map(([name, value]) => `${name} = "${value}"`).join(", ")
        paths[path] = {
          ...paths[path],
          [method]: {
            ...withoutLinks,
            operationId: `${operation["operationId"]}.at${path.replace(/[^A-Za-z0-9]+/g, "_")}`,
            description: `${method.toUpperCase()} ${template} with ${fixed}: the router takes this path there.` +
              (operation["description"] === undefined ? "" : ` ${operation["description"]}`),
            parameters: (operation["parameters"] ?? []).filter((p: JsonObject) => !(p["in"] === "path" && p["name"] in params))
          }
        }
      }
    }
  }
  return { ...spec, paths }
}
