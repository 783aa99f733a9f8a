import {
  type AuthenticationResponseJSON,
  AuthenticatorEmulator,
  type AuthenticatorParameters,
  parseCreationOptionsFromJSON,
  parseRequestOptionsFromJSON,
  PasskeysCredentialsMemoryRepository,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  WebAuthnEmulator
} from "nid-webauthn-emulator"
import { Effect } from "effect"

/*
 * A software FIDO2 authenticator for tests, on nid-webauthn-emulator: ES256 keys, user presence and verification
 * always given, a sign counter that moves by one per assertion, credentials kept in memory.
 *
 * Each SoftwareAuthenticator has a credential store of its own. The emulator's default (and so its
 * `createPasskeysEmulator()`) shares one static store across every instance in the process, where one test's
 * passkeys would answer another test's discoverable login; that is why this does not use it.
 *
 * Two uses:
 * - raw HTTP tests: `register`/`authenticate` take the options JSON the server answered (MFA's `{publicKey}`
 *   shape or the bare passkey shape) and return the response JSON to post back;
 * - @supabase/auth-js in Node: `install(origin)` puts the browser globals auth-js checks in place (`window`,
 *   `document`, `navigator.credentials`, a `PublicKeyCredential` class with the Level 3 JSON parsers) until
 *   `uninstall()`. While installed, auth-js believes it runs in a browser: create clients with
 *   `persistSession: false` and `detectSessionInUrl: false`, so they touch no storage and no URL.
 */

export interface SoftwareAuthenticatorSettings {
  /** The AAGUID it reports, as a UUID; the emulator's own ("NID-AUTH-3141592" in ASCII) by default. */
  readonly aaguid?: string
  /** The transports its registrations list; ["usb"] by default. */
  readonly transports?: ReadonlyArray<"usb" | "nfc" | "ble" | "hybrid" | "internal">
}

/**
 * Options JSON as a server sent it (typically straight out of `response.json()`): wrapped in `{publicKey}` (an MFA
 * challenge's `credential_options`) or bare (passkeys). The emulator checks the shape as a browser would.
 */
const unwrap = <Options>(options: unknown): Options =>
  (typeof options === "object" && options !== null && "publicKey" in options ? options.publicKey : options) as Options

/** The globals `install` replaces, to put back as they were. */
const GLOBALS = ["window", "document", "navigator", "PublicKeyCredential"] as const

export class SoftwareAuthenticator {
  readonly emulator: WebAuthnEmulator
  private saved: Map<string, PropertyDescriptor | undefined> | undefined

  constructor(settings: SoftwareAuthenticatorSettings = {}) {
    this.emulator = new WebAuthnEmulator(
      new AuthenticatorEmulator({
        credentialsRepository: new PasskeysCredentialsMemoryRepository(),
        ...(settings.aaguid === undefined ? {} : {
          aaguid: Uint8Array.from(Buffer.from(settings.aaguid.replaceAll("-", ""), "hex"))
        }),
        ...(settings.transports === undefined ? {} : { transports: [...settings.transports] as AuthenticatorParameters["transports"] })
      })
    )
  }

  /** navigator.credentials.create on a page at `origin`, from the server's creation options JSON. */
  register(origin: string, options: unknown): RegistrationResponseJSON {
    return this.emulator.createJSON(origin, unwrap<PublicKeyCredentialCreationOptionsJSON>(options))
  }

  /** navigator.credentials.get on a page at `origin`, from the server's request options JSON. */
  authenticate(origin: string, options: unknown): AuthenticationResponseJSON {
    return this.emulator.getJSON(origin, unwrap<PublicKeyCredentialRequestOptionsJSON>(options))
  }

  /** Makes this authenticator the browser's for a page at `origin`, until `uninstall()`. */
  install(origin: string): void {
    if (this.saved !== undefined) throw new Error("SoftwareAuthenticator is already installed")
    const emulator = this.emulator
    const page = new URL(origin)
    // A class, so auth-js's `response instanceof PublicKeyCredential` holds for what create/get return.
    class PublicKeyCredential {
      static parseCreationOptionsFromJSON = parseCreationOptionsFromJSON
      static parseRequestOptionsFromJSON = parseRequestOptionsFromJSON
      static isUserVerifyingPlatformAuthenticatorAvailable = async () => true
      static isConditionalMediationAvailable = async () => false
    }
    const asCredential = <A extends object>(made: A): A => Object.setPrototypeOf(made, PublicKeyCredential.prototype)
    const credentials = {
      create: async (options: Parameters<WebAuthnEmulator["create"]>[1]) => asCredential(emulator.create(page.origin, options)),
      get: async (options: Parameters<WebAuthnEmulator["get"]>[1]) => asCredential(emulator.get(page.origin, options))
    }
    const globals: Record<(typeof GLOBALS)[number], unknown> = {
      window: { PublicKeyCredential, location: { origin: page.origin, hostname: page.hostname, href: page.href } },
      document: {},
      navigator: { credentials },
      PublicKeyCredential
    }
    this.saved = new Map(GLOBALS.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]))
    for (const name of GLOBALS) {
      Object.defineProperty(globalThis, name, { value: globals[name], configurable: true, writable: true, enumerable: false })
    }
  }

  /** Puts back the globals `install` replaced (Node's own `navigator`, where it has one). */
  uninstall(): void {
    if (this.saved === undefined) return
    for (const [name, descriptor] of this.saved) {
      if (descriptor === undefined) Reflect.deleteProperty(globalThis, name)
      else Object.defineProperty(globalThis, name, descriptor)
    }
    this.saved = undefined
  }
}

/**
 * Runs `use` with a fresh authenticator installed as the browser's at `origin` (what auth-js's WebAuthn helpers call),
 * and takes it away afterwards, whatever `use` did.
 */
export const withAuthenticator = <A, E, R>(origin: string, use: (authenticator: SoftwareAuthenticator) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const authenticator = new SoftwareAuthenticator()
      authenticator.install(origin)
      return authenticator
    }),
    use,
    (authenticator) => Effect.sync(() => authenticator.uninstall())
  )
