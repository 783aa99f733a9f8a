import type { DescMessage } from "@bufbuild/protobuf"
import { Rpc, RpcGroup } from "@effect/rpc"
import * as pb from "../../gen/gatehouse/iam/v1/iam_pb.js"
import { IamError } from "../domain/IamError.js"
import { ProtoMessage } from "./ProtoMessage.js"

const op = <const Tag extends string, I extends DescMessage, O extends DescMessage>(
  tag: Tag,
  input: I,
  output: O
) => Rpc.make(tag, { payload: ProtoMessage(input), success: ProtoMessage(output), error: IamError })

/**
 * The contract's operations as an @effect/rpc group, for Effect clients (served at POST /auth/rpc on the main
 * port). Payloads and results are the generated protobuf messages; failures are IamError. Credentials go in
 * the `authorization` header, as on every other transport.
 */
export class IamRpcs extends RpcGroup.make(
  op("Register", pb.RegisterRequestSchema, pb.RegisterResponseSchema),
  op("Login", pb.LoginRequestSchema, pb.LoginResponseSchema),
  op("Logout", pb.LogoutRequestSchema, pb.LogoutResponseSchema),
  op("GenerateToken", pb.GenerateTokenRequestSchema, pb.GenerateTokenResponseSchema),
  op("RefreshToken", pb.RefreshTokenRequestSchema, pb.RefreshTokenResponseSchema),
  op("ValidateToken", pb.ValidateTokenRequestSchema, pb.ValidateTokenResponseSchema),
  op("CreateRole", pb.CreateRoleRequestSchema, pb.CreateRoleResponseSchema),
  op("ListRoles", pb.ListRolesRequestSchema, pb.ListRolesResponseSchema),
  op("DeleteRole", pb.DeleteRoleRequestSchema, pb.DeleteRoleResponseSchema),
  op("AssignRole", pb.AssignRoleRequestSchema, pb.AssignRoleResponseSchema),
  op("UnassignRole", pb.UnassignRoleRequestSchema, pb.UnassignRoleResponseSchema),
  op("ListUserRoles", pb.ListUserRolesRequestSchema, pb.ListUserRolesResponseSchema),
  op("CreatePermission", pb.CreatePermissionRequestSchema, pb.CreatePermissionResponseSchema),
  op("ListPermissions", pb.ListPermissionsRequestSchema, pb.ListPermissionsResponseSchema),
  op("DeletePermission", pb.DeletePermissionRequestSchema, pb.DeletePermissionResponseSchema),
  op("GrantPermission", pb.GrantPermissionRequestSchema, pb.GrantPermissionResponseSchema),
  op("RevokePermission", pb.RevokePermissionRequestSchema, pb.RevokePermissionResponseSchema),
  op("ListRolePermissions", pb.ListRolePermissionsRequestSchema, pb.ListRolePermissionsResponseSchema),
  op("CheckPermission", pb.CheckPermissionRequestSchema, pb.CheckPermissionResponseSchema),
  op("LoginSecondStep", pb.LoginSecondStepRequestSchema, pb.LoginSecondStepResponseSchema),
  op("EnrollTotp", pb.EnrollTotpRequestSchema, pb.EnrollTotpResponseSchema),
  op("VerifyTotpEnrollment", pb.VerifyTotpEnrollmentRequestSchema, pb.VerifyTotpEnrollmentResponseSchema),
  op("RemoveTotp", pb.RemoveTotpRequestSchema, pb.RemoveTotpResponseSchema),
  op("StartOAuthSignIn", pb.StartOAuthSignInRequestSchema, pb.StartOAuthSignInResponseSchema),
  op("FinishOAuthSignIn", pb.FinishOAuthSignInRequestSchema, pb.FinishOAuthSignInResponseSchema)
) {}
