/**
 * The database enumerations resource_type and action_type. The stored value is also what the Casbin policy
 * compares, so a policy line reads `p, editor, USER, UPDATE`; the proto enums map onto these names at the
 * edge (ProtoEnums).
 */
export const RESOURCES = ["USER", "ROLE", "PERMISSION", "TOKEN", "PRODUCT", "ORDER"] as const
export type Resource = (typeof RESOURCES)[number]
export const ACTIONS = ["CREATE", "READ", "UPDATE", "DELETE", "LIST"] as const
export type Action = (typeof ACTIONS)[number]
