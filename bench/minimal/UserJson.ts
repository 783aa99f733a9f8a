import type { Row } from "./MinimalSql.js"

// GoTrue's user JSON as Gatehouse writes it (src/auth/users/UserJson.ts), written out by hand: the minimal server
// builds plain objects, with no Schema classes, so the comparison shows what Gatehouse's encoding costs.

const iso = (date: Date | null | undefined): string | undefined => (date == null ? undefined : date.toISOString())
const EPOCH = new Date(0).toISOString()

/** Keys whose value is undefined are left out, as GoTrue's omitempty does. */
const present = (record: Record<string, unknown>): Record<string, unknown> => {
  for (const key of Object.keys(record)) if (record[key] === undefined) delete record[key]
  return record
}

export const identityJson = (row: Row): Record<string, unknown> =>
  present({
    identity_id: row.id,
    id: row.provider_id,
    user_id: row.user_id,
    identity_data: row.identity_data,
    provider: row.provider,
    last_sign_in_at: iso(row.last_sign_in_at),
    created_at: iso(row.created_at) ?? EPOCH,
    updated_at: iso(row.updated_at) ?? EPOCH,
    email: row.email ?? undefined
  })

export const userJson = (row: Row, identities: ReadonlyArray<Row>): Record<string, unknown> =>
  present({
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
    new_email: row.email_change ? row.email_change : undefined,
    email_change_sent_at: iso(row.email_change_sent_at),
    new_phone: row.phone_change ? row.phone_change : undefined,
    phone_change_sent_at: iso(row.phone_change_sent_at),
    reauthentication_sent_at: iso(row.reauthentication_sent_at),
    last_sign_in_at: iso(row.last_sign_in_at),
    app_metadata: row.raw_app_meta_data ?? {},
    user_metadata: row.raw_user_meta_data ?? {},
    identities: identities.map(identityJson),
    created_at: iso(row.created_at) ?? EPOCH,
    updated_at: iso(row.updated_at) ?? EPOCH,
    is_anonymous: row.is_anonymous,
    invited_at: iso(row.invited_at),
    banned_until: iso(row.banned_until)
  })
