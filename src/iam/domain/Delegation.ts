/** `*` as a policy line's resource or action: every resource, every action. The admin role's line is `*, *`. */
export const WILDCARD = "*"

/** A resource and an action as the policy compares them; either may be the wildcard. */
export interface Capability {
  readonly resource: string
  readonly action: string
}

/** One key per capability, for sets of them. */
export const capabilityKey = (capability: Capability): string => `${capability.resource}/${capability.action}`

/**
 * What a user holds, as delegation counts it. `admin`: the policy allows them the wildcard on the wildcard (the
 * admin role). `roles`: the ids of the roles assigned to them. `capabilities`: the keys of every concrete
 * resource/action the policy allows them. The policy engine decided each of these, wildcards and role links
 * included; this only records its answers, so the rule below cannot drift from what is enforced.
 */
export interface Holdings {
  readonly admin: boolean
  readonly roles: ReadonlySet<number>
  readonly capabilities: ReadonlySet<string>
}

/** Everything: the operator at the command line (bootstrap-admin), who holds the database itself. */
export const EVERYTHING: Holdings = { admin: true, roles: new Set(), capabilities: new Set() }

/** What a caller hands out or takes away. */
export type Delegation =
  /** Assigning, unassigning or deleting role `roleId`. */
  | { readonly _tag: "Role"; readonly roleId: number }
  /**
   * Granting, revoking or deleting permission `permissionId`, which allows `capability` (undefined when there is
   * no such permission: nobody but an admin holds it, so a non-admin learns nothing about which ids exist).
   */
  | { readonly _tag: "Permission"; readonly permissionId: number; readonly capability: Capability | undefined }
  /** A token for user `userId`, who holds `holdings`. */
  | { readonly _tag: "Token"; readonly userId: number; readonly holdings: Holdings }

export type DelegationDecision =
  | { readonly _tag: "Allow" }
  /** `lacking` names what the caller does not hold, in terms the caller already used (ids they sent). */
  | { readonly _tag: "Deny"; readonly lacking: string }

const ALLOW: DelegationDecision = { _tag: "Allow" }
const deny = (lacking: string): DelegationDecision => ({ _tag: "Deny", lacking })

const isWildcard = (capability: Capability): boolean =>
  capability.resource === WILDCARD || capability.action === WILDCARD

/**
 * Nobody hands out or takes away what they do not hold themselves. A role is held by having it; a permission by
 * the policy allowing the caller its resource and action; a wildcard only by an admin. A token may be minted only
 * for a user who holds nothing the caller does not: every capability of theirs is the caller's too, and they are
 * not an admin unless the caller is. Admins hold everything. Taking away is held to the same rule as handing out,
 * so someone who may change role links cannot strip the admins of their role either.
 */
export const decideDelegation = (caller: Holdings, delegation: Delegation): DelegationDecision => {
  if (caller.admin) return ALLOW
  switch (delegation._tag) {
    case "Role":
      return caller.roles.has(delegation.roleId) ? ALLOW : deny(`role ${delegation.roleId}`)
    case "Permission": {
      const { capability } = delegation
      if (capability !== undefined && isWildcard(capability)) return deny("the wildcard (*), which only an admin holds")
      return capability !== undefined && caller.capabilities.has(capabilityKey(capability))
        ? ALLOW
        : deny(`permission ${delegation.permissionId}`)
    }
    case "Token": {
      const target = delegation.holdings
      const covered = !target.admin && [...target.capabilities].every((key) => caller.capabilities.has(key))
      return covered ? ALLOW : deny(`every permission user ${delegation.userId} holds`)
    }
  }
}
