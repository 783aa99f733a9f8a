/**
 * Why a port could not be opened, said so that the reader knows what to change: a port in use names the setting
 * that moves it (the most common first-hour failure is a second server, or another program, on the default port).
 * Other failures (EACCES for a low port, EADDRNOTAVAIL for a host that is not this machine's) keep Node's words.
 */
export const listenFailure = (
  address: { readonly host: string; readonly port: number },
  setting: string,
  error: unknown
): string => {
  const where = `could not listen on ${address.host}:${address.port}`
  if (typeof error === "object" && error !== null && (error as NodeJS.ErrnoException).code === "EADDRINUSE") {
    return `${where}: the port is in use (by another Gatehouse?): stop that process, or set ${setting} to a free port`
  }
  return `${where}: ${error instanceof Error ? error.message : String(error)}`
}
