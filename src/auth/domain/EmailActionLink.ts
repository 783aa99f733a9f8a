/**
 * The link a mail (or /admin/generate_link) hands out: `<API_EXTERNAL_URL><path>?token=<hash>&type=<type>&redirect_to=<…>`,
 * GoTrue's ConfirmationURL. `path` is one of MAILER_URLPATHS_*, resolved against the external URL so a base path
 * such as `/auth/v1` is kept.
 */
export const emailActionLink = (externalUrl: string, path: string, tokenHash: string, type: string, redirectTo: string): string => {
  const url = new URL(path, externalUrl.endsWith("/") ? externalUrl : `${externalUrl}/`)
  url.searchParams.set("token", tokenHash)
  url.searchParams.set("type", type)
  url.searchParams.set("redirect_to", redirectTo)
  return url.toString()
}
