import { ActionType, ResourceType } from "../gen/gatehouse/iam/v1/iam_pb.js"
import type { Action, Resource } from "./domain/ResourceAction.js"

// The proto name without its prefix is the domain name (RESOURCE_TYPE_USER is 'USER').
const RESOURCE_BY_ENUM: ReadonlyMap<ResourceType, Resource> = new Map([
  [ResourceType.USER, "USER"],
  [ResourceType.ROLE, "ROLE"],
  [ResourceType.PERMISSION, "PERMISSION"],
  [ResourceType.TOKEN, "TOKEN"],
  [ResourceType.PRODUCT, "PRODUCT"],
  [ResourceType.ORDER, "ORDER"]
])
const ACTION_BY_ENUM: ReadonlyMap<ActionType, Action> = new Map([
  [ActionType.CREATE, "CREATE"],
  [ActionType.READ, "READ"],
  [ActionType.UPDATE, "UPDATE"],
  [ActionType.DELETE, "DELETE"],
  [ActionType.LIST, "LIST"]
])

/** undefined for UNSPECIFIED and for numbers no enum value has (proto3 enums are open). */
export const resourceOf = (value: ResourceType): Resource | undefined => RESOURCE_BY_ENUM.get(value)
export const actionOf = (value: ActionType): Action | undefined => ACTION_BY_ENUM.get(value)

export const resourceEnum = (resource: Resource): ResourceType => ResourceType[resource]
export const actionEnum = (action: Action): ActionType => ActionType[action]
