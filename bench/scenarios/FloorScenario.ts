import { runAutocannon } from "../load/AutocannonLoad.js"
import type { Scenario } from "./Scenario.js"

/** The cost of the stack alone: Effect's HttpApi (Gatehouse's side) and node:http answering the same JSON. */
export const floor: Scenario = {
  id: "floor",
  title: "Floor: hello GET /user (no database)",
  sides: { gatehouse: "Effect HttpApi", minimal: "node:http" },
  floor: true,
  concurrency: (o) => o.connections,
  load: async (target, { options }) => ({
    run: (window, spec) => runAutocannon({ target: target.http, connections: options.connections, path: "/user", spec, window })
  })
}
