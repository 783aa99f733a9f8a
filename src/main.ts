#!/usr/bin/env node
// The program's entry (`node dist/main.js`): the command line is src/cli/ (usage, dispatch, the server composition).
import { holdYoungGeneration } from "./platform/process/YoungGeneration.js"

// Before the program's modules load: their loading is what grows the young generation (YoungGeneration.ts).
holdYoungGeneration()
const { cli } = await import("./cli/Cli.js")
void cli(process.argv.slice(2))
