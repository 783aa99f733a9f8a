import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { Effect } from "effect"
import { AppServerLive } from "./Chromium.js"

const SUPABASE_UMD = createRequire(import.meta.url).resolve("@supabase/supabase-js/dist/umd/supabase.js")

/** The app's page: supabase-js's UMD bundle, which defines `window.supabase`; a test drives it from there. */
const APP_PAGE = "<!doctype html><html><head><meta charset=\"utf-8\"><title>app</title><script src=\"/supabase.js\"></script></head>" +
  "<body><p id=\"app\">app</p></body></html>"

/** An app on its own origin that serves only that page and supabase-js's own browser bundle. */
export const SupabaseAppLive = AppServerLive(Effect.sync(() => ({
  "/": { type: "text/html; charset=utf-8", body: APP_PAGE },
  "/supabase.js": { type: "text/javascript; charset=utf-8", body: readFileSync(SUPABASE_UMD) }
})))
