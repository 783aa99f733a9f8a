/**
 * The external identity providers Gatehouse accepts configuration for, by the lowercase names GoTrue uses in
 * `/authorize?provider=`, in `EXTERNAL_<NAME>_*` variables and as keys of `/settings` `external`.
 */
export const OAUTH_PROVIDERS = [
  "apple",
  "azure",
  "bitbucket",
  "discord",
  "facebook",
  "figma",
  "fly",
  "github",
  "gitlab",
  "google",
  "kakao",
  "keycloak",
  "linkedin",
  "linkedin_oidc",
  "notion",
  "slack",
  "slack_oidc",
  "snapchat",
  "spotify",
  "twitch",
  "twitter",
  "workos",
  "zoom"
] as const

export type OAuthProviderName = (typeof OAUTH_PROVIDERS)[number]
