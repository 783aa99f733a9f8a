#!/usr/bin/env node
// The program's entry (`node dist/main.js`): the command line is src/cli/ (usage, dispatch, the server composition).
import { cli } from "./cli/Cli.js"

void cli(process.argv.slice(2))
