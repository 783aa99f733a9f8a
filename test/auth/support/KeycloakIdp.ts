/**
 * A real OpenID provider (npm oidc-provider) on 127.0.0.1 and a free port, laid out as a Keycloak realm: issuer
 * `<origin>/realms/test`, endpoints under `/protocol/openid-connect/{auth,token,userinfo,certs}`. Logging in is a
 * form post to the interaction page naming an account of `accounts`; consent is granted with it. A test can make
 * the token endpoint answer another ID token than the one oidc-provider issued (`rewriteIdToken`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { decodeJwt, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import { createMemoryAdapter } from "oidc-provider/lib/adapters/memory_adapter.js"

export interface IdpAccount {
  readonly sub: string
  readonly email: string
  readonly email_verified: boolean
  readonly name: string
  readonly picture?: string
  readonly preferred_username?: string
}

/** Signs claims as an ID token with the realm's key, or with a key the realm's key set does not hold. */
export type IdTokenSigner = (claims: JWTPayload, key?: "realm" | "foreign") => Promise<string>

/**
 * Given the claims of the ID token oidc-provider issued, the ID token the token endpoint answers instead; undefined
 * leaves it out of the answer.
 */
export type IdTokenRewrite = (claims: JWTPayload, sign: IdTokenSigner) => Promise<string | undefined>

export interface KeycloakIdp {
  /** The realm URL, for EXTERNAL_KEYCLOAK_URL. */
  readonly realmUrl: string
  readonly clientId: string
  readonly clientSecret: string
  /** Every request the provider received, by method and path (with query). */
  readonly requests: Array<{ readonly method: string; readonly url: string }>
  /** While set, the token endpoint's answers carry the ID token this makes (a misbehaving or impersonated realm). */
  readonly rewriteIdToken: (rewrite: IdTokenRewrite | null) => void
  readonly close: () => Promise<void>
}

const REALM = "/realms/test"

/**
 * oidc-provider, imported without the warning it prints on import on any Node before 22 ("Unsupported runtime"):
 * `engines` allows Node 20, and these tests pass on it.
 */
const loadProvider = async (): Promise<any> => {
  const warn = console.warn
  console.warn = (...args: Array<unknown>) => {
    if (!String(args[0]).includes("Unsupported runtime")) warn(...args)
  }
  try {
    return (await import("oidc-provider")).default
  } finally {
    console.warn = warn
  }
}

/**
 * Holds back the token endpoint's JSON answer and sends it with its id_token rewritten. oidc-provider (koa) ends the
 * response with the whole body, having set its Content-Length, which no longer holds.
 */
const withIdTokenRewritten = (res: ServerResponse, rewrite: IdTokenRewrite, sign: IdTokenSigner): void => {
  const end = res.end.bind(res)
  const setHeader = res.setHeader.bind(res)
  res.setHeader = (name, value) => (name.toLowerCase() === "content-length" ? res : setHeader(name, value))
  res.end = ((body?: unknown) => {
    const text = typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : ""
    const answer = JSON.parse(text === "" ? "{}" : text) as Record<string, unknown>
    if (typeof answer["id_token"] !== "string") return end(body as string)
    rewrite(decodeJwt(answer["id_token"]), sign).then((idToken) => {
      const { id_token: _, ...rest } = answer
      end(JSON.stringify(idToken === undefined ? rest : { ...rest, id_token: idToken }))
    }, (error) => end(JSON.stringify({ error: "server_error", error_description: String(error) })))
    return res
  }) as typeof res.end
}

const formOf = (req: IncomingMessage): Promise<URLSearchParams> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))))
    req.on("error", reject)
  })

export const startKeycloakIdp = async (options: {
  readonly redirectUri: string
  readonly accounts: Readonly<Record<string, IdpAccount>>
}): Promise<KeycloakIdp> => {
  const clientId = "gatehouse"
  const clientSecret = "idp-client-secret"
  const requests: Array<{ method: string; url: string }> = []
  let rewrite: IdTokenRewrite | null = null
  let provider: any
  let handler: (req: IncomingMessage, res: ServerResponse) => void = () => undefined

  const login = async (req: IncomingMessage, res: ServerResponse) => {
    const form = await formOf(req)
    const accountId = form.get("login") ?? ""
    const details = await provider.interactionDetails(req, res)
    if (options.accounts[accountId] === undefined) {
      await provider.interactionFinished(req, res, { error: "access_denied", error_description: "unknown account" })
      return
    }
    const grant = new provider.Grant({ accountId, clientId: details.params.client_id })
    grant.addOIDCScope(String(details.params.scope))
    const grantId = await grant.save()
    await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false })
  }

  const server: Server = createServer((req, res) => {
    const url = req.url ?? "/"
    requests.push({ method: req.method ?? "GET", url })
    if (!url.startsWith(REALM)) {
      res.statusCode = 404
      res.end()
      return
    }
    if (url.startsWith(`${REALM}/interaction/`)) {
      if (req.method === "POST") {
        login(req, res).catch((error) => {
          res.statusCode = 500
          res.end(String(error))
        })
      } else {
        res.setHeader("content-type", "text/html")
        res.end(`<form method="post"><input name="login"></form>`)
      }
      return
    }
    if (rewrite !== null && req.method === "POST" && url === `${REALM}/protocol/openid-connect/token`) {
      withIdTokenRewritten(res, rewrite, sign)
    }
    // Mounted below the realm path as Express would mount it: oidc-provider reads the prefix from originalUrl.
    ;(req as any).originalUrl = url
    req.url = url.slice(REALM.length) || "/"
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("expected a TCP address")
  const realmUrl = `http://127.0.0.1:${address.port}${REALM}`

  const { privateKey } = await generateKeyPair("RS256", { extractable: true })
  const foreignKey = (await generateKeyPair("RS256")).privateKey
  // The realm's kid on both: a verifier finds the key by it, and only the realm's key matches the signature.
  const sign: IdTokenSigner = (claims, key = "realm") =>
    new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "test-realm-key", typ: "JWT" }).sign(key === "realm" ? privateKey : foreignKey)
  const Provider = await loadProvider()
  provider = new Provider(realmUrl, {
    // The in-memory store and the token lifetimes chosen here (a test's provider lives as long as its test): left to
    // oidc-provider's defaults, each prints a development-only notice.
    adapter: createMemoryAdapter(),
    ttl: { AccessToken: 600, Grant: 600, IdToken: 600, Interaction: 600, Session: 600 },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "test-realm-key", use: "sig", alg: "RS256" }] },
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [options.redirectUri],
      grant_types: ["authorization_code"],
      response_types: ["code"]
    }],
    findAccount: (_ctx: unknown, id: string) => {
      const account = options.accounts[id]
      return account === undefined ? undefined : { accountId: id, claims: () => account }
    },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name", "picture", "preferred_username"]
    },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `${REALM}/interaction/${interaction.uid}` },
    routes: {
      authorization: "/protocol/openid-connect/auth",
      token: "/protocol/openid-connect/token",
      userinfo: "/protocol/openid-connect/userinfo",
      jwks: "/protocol/openid-connect/certs"
    },
    cookies: { keys: ["keycloak-idp-test-cookie-key"] },
    pkce: { required: () => true }
  })
  handler = provider.callback()

  return {
    realmUrl,
    clientId,
    clientSecret,
    requests,
    rewriteIdToken: (next) => {
      rewrite = next
    },
    close: () => new Promise((resolve) => server.close(() => resolve()))
  }
}
