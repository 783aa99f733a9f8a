import { password, refresh, signup, user, userDuringBurst } from "./AuthScenarios.js"
import { floor } from "./FloorScenario.js"
import { iamLogin, iamValidate } from "./IamScenarios.js"
import type { Scenario } from "./Scenario.js"

/** Every scenario, in the order they run and appear in the table. */
export const SCENARIOS: ReadonlyArray<Scenario> = [signup, password, refresh, user, userDuringBurst, iamLogin, iamValidate, floor]
