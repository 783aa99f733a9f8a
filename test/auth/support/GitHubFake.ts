/**
 * A local server in GitHub's place (EXTERNAL_GITHUB_URL, a GitHub Enterprise Server's layout: the OAuth pages at the
 * root, the REST API under /api/v3), answering in GitHub's real response shapes and recording every request it
 * receives (method, path, headers, body). The account it signs in and its addresses are the test's to set.
 */
import { createServer, type IncomingMessage } from "node:http"

export const GITHUB_CLIENT_ID = "Iv1.8a61f9b3a7aba766"
export const GITHUB_CLIENT_SECRET = "github-client-secret"
export const GITHUB_REDIRECT_URI = "http://localhost:9999/callback"
export const GITHUB_ACCESS_TOKEN = "gho_16C7e42F292c6912E7710c838347Ae178B4a"
/** The one code the fake exchanges; any other gets GitHub's bad_verification_code. */
export const GITHUB_CODE = "c0de-from-github"

export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export interface GitHubEmail {
  readonly email: string
  readonly primary: boolean
  readonly verified: boolean
  readonly visibility: string | null
}

/** GET /user, as GitHub answers it for octocat. */
export const octocat = {
  login: "octocat",
  id: 583231,
  node_id: "MDQ6VXNlcjU4MzIzMQ==",
  avatar_url: "https://avatars.githubusercontent.com/u/583231?v=4",
  type: "User",
  site_admin: false,
  name: "The Octocat",
  company: "@github",
  email: null as string | null,
  created_at: "2011-01-25T18:44:36Z"
}

export type GitHubUser = typeof octocat

export interface GitHubFake {
  readonly url: string
  readonly seen: Array<SeenRequest>
  /** The account the next exchange signs in. */
  user: GitHubUser
  emails: Array<GitHubEmail>
  readonly close: () => Promise<void>
}

export const startGitHubFake = async (): Promise<GitHubFake> => {
  const fake: Omit<GitHubFake, "url" | "close"> = { seen: [], user: octocat, emails: [] }
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = req.url ?? "/"
      const body = Buffer.concat(chunks).toString("utf8")
      fake.seen.push({ method: req.method ?? "GET", path, headers: req.headers, body })
      res.setHeader("content-type", "application/json; charset=utf-8")
      if (path === "/login/oauth/access_token") {
        // GitHub answers a bad code with 200 and an error body.
        res.end(JSON.stringify(
          new URLSearchParams(body).get("code") === GITHUB_CODE
            ? { access_token: GITHUB_ACCESS_TOKEN, token_type: "bearer", scope: "user:email" }
            : { error: "bad_verification_code", error_description: "The code passed is incorrect or expired.", error_uri: "https://docs.github.com" }
        ))
      } else if (path === "/api/v3/user") {
        res.end(JSON.stringify(fake.user))
      } else if (path === "/api/v3/user/emails") {
        res.end(JSON.stringify(fake.emails))
      } else {
        res.statusCode = 404
        res.end(JSON.stringify({ message: "Not Found" }))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const url = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
  return Object.assign(fake, { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
}

/** The server's environment for github against the fake. */
export const githubEnv = (fake: GitHubFake): Record<string, string> => ({
  AUTH_EXTERNAL_GITHUB_ENABLED: "true",
  AUTH_EXTERNAL_GITHUB_CLIENT_ID: GITHUB_CLIENT_ID,
  AUTH_EXTERNAL_GITHUB_SECRET: GITHUB_CLIENT_SECRET,
  AUTH_EXTERNAL_GITHUB_REDIRECT_URI: GITHUB_REDIRECT_URI,
  AUTH_EXTERNAL_GITHUB_URL: fake.url
})
