import { Server, Socket } from "node:net"

/**
 * The unit project's setup (vitest.config.ts): its files run without a database or a server, so a socket opened by
 * one of them (a listening test server, PGlite's, a connection to PostgreSQL) is a misfiled test. Failing at once
 * says so, instead of `npm run test:unit` quietly starting databases.
 */
const misfiled = (what: string) => (): never => {
  throw new Error(`a unit test ${what}: move its file from UNIT to the integration project in vitest.config.ts`)
}

Server.prototype.listen = misfiled("opened a listening socket") as never
Socket.prototype.connect = misfiled("opened a connection") as never
