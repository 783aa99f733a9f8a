import { Context, Effect, Either, Layer } from "effect"
import { AppConfig, type OAuthProviderConfig } from "../../config/AppConfig.js"
import { OAUTH_PROVIDERS, type OAuthProviderName } from "../../config/OAuthProviders.js"
import type { OAuthProvider } from "./OAuthProvider.js"
import { discord } from "./providers/Discord.js"
import { facebook } from "./providers/Facebook.js"
import { apple } from "./providers/Apple.js"
import { azure } from "./providers/Azure.js"
import { bitbucket } from "./providers/Bitbucket.js"
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

/** Why `/authorize?provider=` cannot be served, in GoTrue's words (after its "Unsupported provider: "). */
export type Unavailable = { readonly _tag: "Unknown"; readonly name: string } | { readonly _tag: "Disabled" }

/** The external identity providers, by name: the port every OAuth sign-in goes through. */
export class OAuthProviders extends Context.Tag("auth/OAuthProviders")<OAuthProviders, {
  readonly lookup: (name: string) => Either.Either<OAuthProvider, Unavailable>
}>() {}

/** The providers implemented so far; the others are configured (and listed in /settings) but not served yet. */
const IMPLEMENTED: Partial<Record<OAuthProviderName, (config: OAuthProviderConfig) => OAuthProvider>> = {
  keycloak,
  github,
  discord,
  facebook,
  spotify,
  slack: slackOidc("slack"),
  slack_oidc: slackOidc("slack_oidc"),
  linkedin: linkedinOidc("linkedin"),
  linkedin_oidc: linkedinOidc("linkedin_oidc"),
  notion,
  google,
  azure,
  apple,
  gitlab,
  bitbucket,
  twitch,
  zoom,
  workos,
  twitter
}

const isProviderName = (name: string): name is OAuthProviderName => (OAUTH_PROVIDERS as ReadonlyArray<string>).includes(name)

/** The providers as configured (start-up validation guarantees an enabled one has what it needs). */
export const OAuthProvidersLive = Layer.effect(
  OAuthProviders,
  Effect.map(AppConfig, (config) => {
    const built = new Map<string, OAuthProvider>()
    for (const [name, make] of Object.entries(IMPLEMENTED)) {
      const settings = config.external[name as OAuthProviderName]
      if (settings.enabled && make !== undefined) built.set(name, make(settings))
    }
    return {
      lookup: (name) => {
        const provider = built.get(name)
        if (provider !== undefined) return Either.right(provider)
        return isProviderName(name) && name in IMPLEMENTED ? Either.left({ _tag: "Disabled" }) : Either.left({ _tag: "Unknown", name })
      }
    }
  })
)

/** Given providers, by name, as if enabled: for tests that script what a provider answers. */
export const OAuthProvidersTest = (providers: ReadonlyArray<OAuthProvider>) =>
  Layer.succeed(OAuthProviders, {
    lookup: (name) => {
      const provider = providers.find((p) => p.name === name)
      return provider === undefined ? Either.left({ _tag: "Unknown", name }) : Either.right(provider)
    }
  })
