import { describe, expect, it } from "@effect/vitest"
import { listenFailure } from "../../src/platform/process/ListenFailure.js"

const errno = (code: string, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code })

describe("listenFailure", () => {
  it("a port in use names the setting that moves it", () => {
    expect(listenFailure({ host: "127.0.0.1", port: 8081 }, "PORT", errno("EADDRINUSE", "listen EADDRINUSE: address already in use")))
      .toBe("could not listen on 127.0.0.1:8081: the port is in use (by another Gatehouse?): stop that process, or set PORT to a free port")
  })

  it("any other failure keeps Node's words", () => {
    expect(listenFailure({ host: "10.9.9.9", port: 80 }, "PORT", errno("EADDRNOTAVAIL", "listen EADDRNOTAVAIL: address not available")))
      .toBe("could not listen on 10.9.9.9:80: listen EADDRNOTAVAIL: address not available")
  })
})
