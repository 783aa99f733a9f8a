import { createHash, createHmac } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as bcrypt from "@node-rs/bcrypt"
import type pg from "pg"
import { signHs256, verifyHs256 } from "./Hs256.js"
import type { MinimalConfig } from "./MinimalConfig.js"
import { type Crypto, getUserSql, passwordGrantSql, refreshGrantSql, signupSql, type StartedSession } from "./MinimalSql.js"
import { userJson } from "./UserJson.js"

const BCRYPT_COST = 10

/** bcrypt as Gatehouse does it: cost 10, `2a` hashes, the same work for an unknown account as for a wrong password. */
export const bcryptCrypto = async (jwtSecret: string): Promise<Crypto> => {
  const options = { cost: BCRYPT_COST, version: "2a" } as const
  const dummy = await bcrypt.hash("minimal: no such account", options)
  const refreshKey = createHmac("sha256", jwtSecret).update("gatehouse/refresh-token/v1").digest()
  return {
    hashPassword: (password) => bcrypt.hash(password, options),
    checkPassword: async (password, hash) =>
      hash === undefined ? (await bcrypt.verify(password, dummy), false) : bcrypt.verify(password, hash),
    // Gatehouse's derivation (src/auth/sessions/RefreshTokenCodec.ts), so tokens of either side work on both: GoTrue's
    // signed form, the row id as the counter, signed with a key derived for the session.
    refreshToken: (sessionId, rowId) => {
      const key = createHmac("sha256", refreshKey).update(`gotrue-signed/${sessionId}`).digest()
      const signed = Buffer.concat([Buffer.of(0), Buffer.from(sessionId.replaceAll("-", ""), "hex"), uvarint(BigInt(rowId))])
      const body = Buffer.concat([signed, createHmac("sha256", key).update(signed).digest().subarray(0, 16)])
      const token = Buffer.concat([body, createHash("sha256").update(body).digest().subarray(0, 4)]).toString("base64url")
      return { token, digest: createHash("sha256").update(token).digest("hex") }
    }
  }
}

const uvarint = (value: bigint): Buffer => {
  const out: Array<number> = []
  for (let rest = value; ; rest >>= 7n) {
    if (rest < 0x80n) return Buffer.from([...out, Number(rest)])
    out.push(Number(rest & 0x7fn) | 0x80)
  }
}

const send = (res: ServerResponse, status: number, body: unknown): void => {
  const json = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
  res.end(json)
}

const readJson = (req: IncomingMessage): Promise<Record<string, any>> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("error", reject)
    req.on("end", () => {
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown
        resolve(typeof parsed === "object" && parsed !== null ? parsed as Record<string, any> : {})
      } catch {
        resolve({})
      }
    })
  })

const invalidGrant = { error: "invalid_grant", error_description: "Invalid login credentials" }

/** POST /signup, POST /token (password, refresh_token) and GET /user, with GoTrue's response shapes. */
export const minimalAuthHandler = (pool: pg.Pool, crypto: Crypto, config: MinimalConfig) => {
  const session = (started: StartedSession) => {
    const iat = Math.floor(Date.now() / 1000)
    const exp = iat + config.jwtExp
    const { user } = started
    const accessToken = signHs256(config.jwtSecret, {
      aud: user.aud ?? "authenticated",
      exp,
      iat,
      iss: config.issuer,
      sub: user.id,
      email: user.email ?? "",
      phone: user.phone ?? "",
      app_metadata: user.raw_app_meta_data ?? {},
      user_metadata: user.raw_user_meta_data ?? {},
      role: user.role ?? "",
      aal: "aal1",
      amr: started.amr,
      session_id: started.sessionId,
      is_anonymous: user.is_anonymous
    })
    return {
      access_token: accessToken,
      token_type: "bearer",
      expires_in: config.jwtExp,
      expires_at: exp,
      refresh_token: started.refreshToken,
      user: userJson(user, started.identities)
    }
  }

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? "/"
    const query = url.indexOf("?")
    const path = query < 0 ? url : url.slice(0, query)
    if (req.method === "GET" && path === "/user") {
      const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1]
      const claims = bearer === undefined ? undefined : verifyHs256(config.jwtSecret, bearer, Math.floor(Date.now() / 1000))
      if (claims === undefined || typeof claims.sub !== "string" || typeof claims.session_id !== "string") {
        return send(res, 403, { code: 403, error_code: "bad_jwt", msg: "invalid JWT" })
      }
      const found = await getUserSql(pool, { userId: claims.sub, sessionId: claims.session_id })
      if (found === "no-session") return send(res, 403, { code: 403, error_code: "session_not_found", msg: "Session not found" })
      return send(res, 200, userJson(found.user, found.identities))
    }
    if (req.method === "POST" && path === "/signup") {
      const body = await readJson(req)
      if (typeof body.email !== "string" || !body.email.includes("@") || typeof body.password !== "string" || body.password.length < 6) {
        return send(res, 400, { code: 400, error_code: "validation_failed", msg: "email and password are required" })
      }
      const started = await signupSql(pool, crypto, { email: body.email, password: body.password })
      if (started === "exists") return send(res, 422, { code: 422, error_code: "user_already_exists", msg: "User already registered" })
      return send(res, 200, session(started))
    }
    if (req.method === "POST" && path === "/token") {
      const grant = new URLSearchParams(query < 0 ? "" : url.slice(query + 1)).get("grant_type")
      const body = await readJson(req)
      if (grant === "password" && typeof body.email === "string" && typeof body.password === "string") {
        const started = await passwordGrantSql(pool, crypto, { email: body.email, password: body.password })
        return started === "invalid" ? send(res, 400, invalidGrant) : send(res, 200, session(started))
      }
      if (grant === "refresh_token" && typeof body.refresh_token === "string" && /^[A-Za-z0-9_-]{51,63}$/.test(body.refresh_token)) {
        const digest = createHash("sha256").update(body.refresh_token).digest("hex")
        const started = await refreshGrantSql(pool, crypto, { digest })
        return started === "invalid"
          ? send(res, 400, { error: "invalid_grant", error_description: "Invalid Refresh Token: Refresh Token Not Found" })
          : send(res, 200, session(started))
      }
      return send(res, 400, { error: "invalid_request", error_description: "unsupported grant" })
    }
    if (req.method === "GET" && path === "/health") return send(res, 200, { name: "minimal" })
    return send(res, 404, { code: 404, error_code: "not_found", msg: "not found" })
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((error: unknown) => {
      process.stderr.write(`minimal: ${error instanceof Error ? error.stack : String(error)}\n`)
      if (!res.headersSent) send(res, 500, { code: 500, error_code: "unexpected_failure", msg: "unexpected failure" })
      else res.destroy()
    })
  }
}
