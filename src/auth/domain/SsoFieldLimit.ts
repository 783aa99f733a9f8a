/**
 * The longest SSO domain, resource_id or entity ID accepted, in UTF-8 bytes. Each has a unique btree index, whose
 * entries hold at most 2704 bytes (less once compressed text does not shrink): longer text failed at the insert,
 * GoTrue's 500. 1024 bytes is far beyond any real domain or URL-shaped ID.
 */
export const SSO_FIELD_MAX_BYTES = 1024

/** Why a value is refused for `field`, or undefined when it fits. */
export const ssoFieldTooLong = (field: string, value: string): string | undefined =>
  Buffer.byteLength(value, "utf8") > SSO_FIELD_MAX_BYTES ? `${field} cannot exceed ${SSO_FIELD_MAX_BYTES} bytes` : undefined
