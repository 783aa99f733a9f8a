import type { DescMethod, DescService } from "@bufbuild/protobuf"
import { AuthService, PermissionService, RoleService } from "../gen/gatehouse/iam/v1/iam_pb.js"
import { type Operation, OPERATIONS } from "./domain/Guards.js"

/** The IAM services of proto/gatehouse/iam/v1/iam.proto. */
export const IAM_SERVICES: ReadonlyArray<DescService> = [AuthService, RoleService, PermissionService]

const METHODS = new Map(IAM_SERVICES.flatMap((service) => service.methods.map((m) => [m.name, m] as const)))

/** The proto method behind an operation; every operation of domain/Guards has exactly one. */
export const methodOf = (operation: Operation): DescMethod => METHODS.get(operation)!

/** Checked at start-up: the contract's methods and the operations the handlers implement are the same set. */
export const contractMismatch = (): ReadonlyArray<string> => [
  ...OPERATIONS.filter((op) => !METHODS.has(op)).map((op) => `operation ${op} has no proto method`),
  ...[...METHODS.keys()].filter((name) => !(OPERATIONS as ReadonlyArray<string>).includes(name)).map((n) => `proto method ${n} has no handler`)
]
