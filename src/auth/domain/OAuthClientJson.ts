/** A client's stored fields (an oauth_clients row) that its answers are made from. */
export interface StoredOAuthClient {
  readonly id: string
  readonly registration_type: string
  readonly redirect_uris: string
  readonly grant_types: string
  readonly client_name: string | null
  readonly client_uri: string | null
  readonly logo_uri: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly client_type: string
  readonly token_endpoint_auth_method: string
}

/** A client as GoTrue's admin API and registration answer it (empty optional strings left out). */
export interface OAuthClientJson {
  readonly client_id: string
  readonly client_secret?: string
  readonly client_type: string
  readonly redirect_uris: ReadonlyArray<string>
  readonly token_endpoint_auth_method: string
  readonly grant_types: ReadonlyArray<string>
  readonly response_types: ReadonlyArray<string>
  readonly client_name?: string
  readonly client_uri?: string
  readonly logo_uri?: string
  readonly registration_type: string
  readonly created_at: string
  readonly updated_at: string
}

/** A comma-joined list as GoTrue stores redirect URIs and grant types: blanks dropped. */
export const splitList = (list: string): ReadonlyArray<string> => list.split(",").map((s) => s.trim()).filter((s) => s !== "")

const present = <K extends string>(key: K, value: string | null): { [P in K]?: string } =>
  (value === null || value === "" ? {} : { [key]: value }) as { [P in K]?: string }

/** The client's answer; `secret` only when it was just made (registration, regeneration). */
export const clientJson = (row: StoredOAuthClient, secret?: string): OAuthClientJson => ({
  client_id: row.id,
  ...(secret === undefined ? {} : { client_secret: secret }),
  client_type: row.client_type,
  redirect_uris: splitList(row.redirect_uris),
  token_endpoint_auth_method: row.token_endpoint_auth_method,
  grant_types: splitList(row.grant_types),
  response_types: ["code"],
  ...present("client_name", row.client_name),
  ...present("client_uri", row.client_uri),
  ...present("logo_uri", row.logo_uri),
  registration_type: row.registration_type,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

/** The client as the consent page and the user's grants show it: id, and name, uri and logo when set. */
export const clientDetails = (row: Pick<StoredOAuthClient, "id" | "client_name" | "client_uri" | "logo_uri">) => ({
  id: row.id,
  ...present("name", row.client_name),
  ...present("uri", row.client_uri),
  ...present("logo_uri", row.logo_uri)
})
