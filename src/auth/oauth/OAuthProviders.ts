import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AuthConfig, type OAuthProviderConfig, type OAuthProviderSpec } from "../../config/AuthConfig.js"
import type { IdTokenIssuer } from "../domain/IdToken.js"
import type { OAuthProvider } from "./OAuthProvider.js"
import type { ProviderDescriptor } from "./ProviderDescriptor.js"
import { apple } from "./providers/Apple.js"
import { azure } from "./providers/Azure.js"
import { bitbucket } from "./providers/Bitbucket.js"
import { discord } from "./providers/Discord.js"
import { facebook } from "./providers/Facebook.js"
import { github } from "./providers/GitHub.js"
import { gitlab } from "./providers/GitLab.js"
import { google } from "./providers/Google.js"
import { keycloak } from "./providers/Keycloak.js"
import { linkedinOidc } from "./providers/LinkedIn.js"
import { notion } from "./providers/Notion.js"
import { slackOidc } from "./providers/Slack.js"
import { spotify } from "./providers/Spotify.js"
import { twitch } from "./providers/Twitch.js"
import { twitter } from "./providers/Twitter.js"
import { workos } from "./providers/WorkOS.js"
import { zoom } from "./providers/Zoom.js"

/** A provider GoTrue configures that is not implemented yet: its settings are read and /settings lists it. */
const NOT_SERVED: ProviderDescriptor = {}

/**
 * The external identity providers, one line each, by the lowercase names GoTrue uses in `/authorize?provider=`, in
 * `EXTERNAL_<NAME>_*` variables and as keys of `/settings` `external`. Adding a provider is its descriptor file under
 * providers/ and its line here.
 */
const PROVIDERS = {
  apple,
  azure,
  bitbucket,
  discord,
  facebook,
  figma: NOT_SERVED,
  fly: NOT_SERVED,
  github,
  gitlab,
  google,
  kakao: NOT_SERVED,
  keycloak,
  linkedin: linkedinOidc("linkedin"),
  linkedin_oidc: linkedinOidc("linkedin_oidc"),
  notion,
  slack: slackOidc("slack"),
  slack_oidc: slackOidc("slack_oidc"),
  snapchat: NOT_SERVED,
  spotify,
  twitch,
  twitter,
  workos,
  zoom
} satisfies Record<string, ProviderDescriptor>

export type OAuthProviderName = keyof typeof PROVIDERS

export const OAUTH_PROVIDERS = Object.keys(PROVIDERS) as ReadonlyArray<OAuthProviderName>

const descriptorOf = (name: string): ProviderDescriptor | undefined =>
  Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name as OAuthProviderName] : undefined

/** What the config reads for each provider: the server's composition hands these to it (config imports no auth code). */
export const OAUTH_PROVIDER_SPECS: ReadonlyArray<OAuthProviderSpec> = OAUTH_PROVIDERS.map((name) => ({
  name,
  urlRequired: descriptorOf(name)?.urlRequired === true
}))

/** The providers whose ID tokens POST /token?grant_type=id_token accepts, with what the grant needs of each. */
export const ID_TOKEN_PROVIDERS: ReadonlyArray<readonly [name: OAuthProviderName, issuer: IdTokenIssuer]> = OAUTH_PROVIDERS.flatMap(
  (name) => {
    const idToken = descriptorOf(name)?.idToken
    return idToken === undefined ? [] : [[name, idToken] as const]
  }
)

const UNCONFIGURED: OAuthProviderConfig = { enabled: false, clientId: "", secret: Option.none(), redirectUri: "", url: Option.none() }

/** A provider's EXTERNAL_<NAME>_* settings; a provider the config was not asked to read is off. */
export const providerSettings = (config: AuthConfig, name: string): OAuthProviderConfig => config.external[name] ?? UNCONFIGURED

/** Why `/authorize?provider=` cannot be served, in GoTrue's words (after its "Unsupported provider: "). */
export type Unavailable = { readonly _tag: "Unknown"; readonly name: string } | { readonly _tag: "Disabled" }

/** The external identity providers, by name: the port every OAuth sign-in goes through. */
export class OAuthProviders extends Context.Tag("auth/OAuthProviders")<OAuthProviders, {
  readonly lookup: (name: string) => Either.Either<OAuthProvider, Unavailable>
}>() {}

/**
 * The enabled providers of `config`, by name. `redirectUri`, when given, replaces every provider's own
 * EXTERNAL_<NAME>_REDIRECT_URI: the IAM service's OAuth2 sign-in (src/cli/IamOAuthIdentitiesLive.ts) uses the same
 * providers and credentials, and has the provider send the browser back to its own page.
 */
export const configuredProviders = (config: AuthConfig, redirectUri?: string): Context.Tag.Service<OAuthProviders> => {
  const built = new Map<string, OAuthProvider>()
  for (const name of OAUTH_PROVIDERS) {
    const settings = providerSettings(config, name)
    const make = descriptorOf(name)?.make
    if (settings.enabled && make !== undefined) built.set(name, make(redirectUri === undefined ? settings : { ...settings, redirectUri }))
  }
  return {
    lookup: (name) => {
      const provider = built.get(name)
      if (provider !== undefined) return Either.right(provider)
      return descriptorOf(name)?.make !== undefined ? Either.left({ _tag: "Disabled" }) : Either.left({ _tag: "Unknown", name })
    }
  }
}

/** The providers as configured (start-up validation guarantees an enabled one has what it needs). */
export const OAuthProvidersLive = Layer.effect(OAuthProviders, Effect.map(AuthConfig, (config) => configuredProviders(config)))

/** Given providers, by name, as if enabled: for tests that script what a provider answers. */
export const OAuthProvidersTest = (providers: ReadonlyArray<OAuthProvider>) =>
  Layer.succeed(OAuthProviders, {
    lookup: (name) => {
      const provider = providers.find((p) => p.name === name)
      return provider === undefined ? Either.left({ _tag: "Unknown", name }) : Either.right(provider)
    }
  })
