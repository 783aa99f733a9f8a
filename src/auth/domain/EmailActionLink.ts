/**
 * The link a mail (or /admin/generate_link) hands out: `<API_EXTERNAL_URL><path>?token=<link token>&type=<type>&redirect_to=<…>`,
 * GoTrue's ConfirmationURL (whose token is the code's hash; here it is a random link token, see LinkToken). `path` is one of MAILER_URLPATHS_*, resolved against the external URL so a base path
 * such as `/auth/v1` is kept.
 */
export const emailActionLink = (externalUrl: string, path: string, link: string, type: string, redirectTo: string): string => {
  const url = new URL(path, externalUrl.endsWith("/") ? externalUrl : `${externalUrl}/`)
  url.searchParams.set("token", link)
  url.searchParams.set("type", type)
  url.searchParams.set("redirect_to", redirectTo)
  return url.toString()
}
