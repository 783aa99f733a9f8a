import { Factor } from "../contract/Factor.js"
import { Identity } from "../contract/Identity.js"
import { User } from "../contract/User.js"
import type { FactorRow } from "../domain/FactorRow.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"

const iso = (date: Date | null): string | undefined => (date === null ? undefined : date.toISOString())

/**
 * Keys whose value is undefined are left out, as GoTrue's omitempty does. A loop, not entries/filter/fromEntries:
 * GET /user builds one per user, identity and factor, and the arrays were a visible share of its allocations.
 */
const present = <A extends Record<string, unknown>>(record: A): A => {
  const kept: Record<string, unknown> = {}
  for (const key in record) {
    const value = record[key]
    if (value !== undefined) kept[key] = value
  }
  return kept as A
}

// The values are built from database rows whose types already match the schema (UserJson.test checks that for any
// row), so the constructors skip Schema validation: on GET /user it cost more than the database query.
const trusted = true

export const identityJson = (row: IdentityRow): Identity =>
  new Identity(present({
    identity_id: row.id,
    id: row.provider_id,
    user_id: row.user_id,
    identity_data: row.identity_data,
    provider: row.provider,
    last_sign_in_at: iso(row.last_sign_in_at),
    created_at: iso(row.created_at) ?? new Date(0).toISOString(),
    updated_at: iso(row.updated_at) ?? new Date(0).toISOString(),
    email: row.email ?? undefined
  }), trusted)

export const factorJson = (row: FactorRow): Factor =>
  new Factor(present({
    id: row.id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    status: row.status,
    friendly_name: row.friendly_name === null || row.friendly_name === "" ? undefined : row.friendly_name,
    factor_type: row.factor_type,
    phone: row.phone ?? "",
    last_challenged_at: row.last_challenged_at === null ? null : row.last_challenged_at.toISOString(),
    web_authn_aaguid: row.web_authn_aaguid ?? undefined,
    last_webauthn_challenge_data: row.last_webauthn_challenge_data ?? undefined
  }), trusted)

/** GoTrue's user JSON: secrets and token columns never leave the server; email and phone are "" when unset. */
export const userJson = (
  row: UserRow,
  identities: ReadonlyArray<IdentityRow>,
  factors: ReadonlyArray<FactorRow> = []
): User =>
  new User(present({
    id: row.id,
    aud: row.aud ?? "",
    role: row.role ?? "",
    email: row.email ?? "",
    email_confirmed_at: iso(row.email_confirmed_at),
    phone: row.phone ?? "",
    phone_confirmed_at: iso(row.phone_confirmed_at),
    confirmation_sent_at: iso(row.confirmation_sent_at),
    confirmed_at: iso(row.confirmed_at),
    recovery_sent_at: iso(row.recovery_sent_at),
    new_email: row.email_change !== null && row.email_change !== "" ? row.email_change : undefined,
    email_change_sent_at: iso(row.email_change_sent_at),
    new_phone: row.phone_change !== null && row.phone_change !== "" ? row.phone_change : undefined,
    phone_change_sent_at: iso(row.phone_change_sent_at),
    reauthentication_sent_at: iso(row.reauthentication_sent_at),
    last_sign_in_at: iso(row.last_sign_in_at),
    app_metadata: row.raw_app_meta_data ?? {},
    user_metadata: row.raw_user_meta_data ?? {},
    factors: factors.length === 0 ? undefined : factors.map(factorJson),
    identities: identities.map(identityJson),
    created_at: iso(row.created_at) ?? new Date(0).toISOString(),
    updated_at: iso(row.updated_at) ?? new Date(0).toISOString(),
    is_anonymous: row.is_anonymous,
    invited_at: iso(row.invited_at),
    banned_until: iso(row.banned_until),
    deleted_at: iso(row.deleted_at)
  }), trusted)
