import { VERSION } from "../Package.js"

/** What `--help` prints, and what an unknown command is answered with. */
export const USAGE = `Gatehouse ${VERSION}: a Supabase-Auth-compatible auth server and an IAM service.

Usage:
  gatehouse [serve]    start the server (applies pending migrations first)
  gatehouse multi      serve in GoTrue's multi-instance mode: every request but /health must carry the
                       operator's signature (header x-nf-sign, a JWT signed HS256 with AUTH_OPERATOR_TOKEN,
                       which the mode requires); AUTH_API_ENDPOINT says where the operator reaches the API
  gatehouse migrate    apply pending database migrations and exit (needs only the database settings)
  gatehouse doctor     check that Supabase Auth (GoTrue v2.196) could read every row if started on this database
                       (the way back from Gatehouse): counts rows with a NULL or a value GoTrue cannot read;
                       exit code 0 when it can read them all, 1 otherwise (needs only the database settings)
  gatehouse export-sessions
                       before switching back to Supabase Auth, with Gatehouse stopped: writes each live session's
                       refresh-token key and counter where GoTrue reads them, so apps stay signed in (needs the
                       server's settings: the JWT secret)
  gatehouse keys       print the anon and service_role API keys for Supabase clients, signed with the
                       configured JWT secret (or the signing key in AUTH_JWT_KEYS)
  gatehouse iam bootstrap-admin --username NAME --email ADDRESS
                       create the first IAM administrator (or give an existing account the admin role);
                       the password is read from AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD or standard input
  gatehouse iam generate-key
                       print a new Ed25519 key pair for AUTH_IAM_PASETO_SECRET_KEY (PASERK)
  gatehouse --help     show this help

Configuration comes from the environment and a .env file in the working directory (the environment wins).
With no DATABASE_URL, Gatehouse runs on an embedded PostgreSQL (PGlite) kept in AUTH_DATA_DIR (./.gatehouse).
See .env.example for every setting.
`
