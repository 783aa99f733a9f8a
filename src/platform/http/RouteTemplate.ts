/**
 * A router pattern (`/admin/users/:user_id`) in the form OpenTelemetry and GoTrue report routes in
 * (`/admin/users/{user_id}`): the span's and the metrics' `http.route`, one value per route whatever the ids.
 */
export const routeTemplate = (pattern: string): string =>
  pattern.split("/").map((segment) => (segment.startsWith(":") && segment.length > 1 ? `{${segment.slice(1)}}` : segment)).join("/")

/**
 * The values of a pattern's parameters in a request path, by name. The path is matched from its end, because
 * the router saw it without the `/auth/v1` prefix supabase-js adds. A path that does not line up with the
 * pattern (which the router would not have matched) gives no parameters rather than wrong ones.
 */
export const routeParams = (pattern: string, path: string): Readonly<Record<string, string>> => {
  // Segments after the leading "/": the pattern's first one is compared with whatever segment ends the prefix.
  const names = pattern.split("/").slice(1)
  const segments = path.split("/").slice(1)
  if (segments.length < names.length) return {}
  const tail = segments.slice(segments.length - names.length)
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    const segment = tail[i]!
    if (name.startsWith(":") && name.length > 1) {
      params[name.slice(1)] = safeDecode(segment)
    } else if (name !== segment) {
      return {}
    }
  }
  return params
}

const safeDecode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
