"""One IAM flow through Python stubs generated from all of proto/ with grpcio-tools (test/iam/GeneratedClients.test.ts).

Usage: python python_flow.py ADDRESS GENERATED_DIR USERNAME. Prints one JSON object: what each step saw.
The generated modules are imported beside grpcio-health-checking's and grpcio-reflection's own, in one process: a
copy of grpc.health.v1 or grpc.reflection among the generated files would fail here with "duplicate symbol".
"""
import importlib
import json
import pathlib
import sys

import grpc
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

address, generated, username = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(generated))
modules = sorted(
    ".".join(path.relative_to(generated).with_suffix("").parts) for path in generated.rglob("*_pb2*.py")
)
for name in modules:
    importlib.import_module(name)
from gatehouse.iam.v1 import iam_pb2, iam_pb2_grpc  # noqa: E402

seen = {"modules": modules}
with grpc.insecure_channel(address) as channel:
    health = health_pb2_grpc.HealthStub(channel)
    seen["health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(
        health.Check(health_pb2.HealthCheckRequest(service="gatehouse.iam.v1.AuthService"), timeout=10).status
    )

    auth = iam_pb2_grpc.AuthServiceStub(channel)
    roles = iam_pb2_grpc.RoleServiceStub(channel)
    registered = auth.Register(
        iam_pb2.RegisterRequest(username=username, password="python password", email=f"{username}@example.com"), timeout=10
    )
    bearer = (("authorization", "Bearer " + registered.token.access_token),)
    me = auth.ValidateToken(iam_pb2.ValidateTokenRequest(), metadata=bearer, timeout=10)
    mine = roles.ListUserRoles(iam_pb2.ListUserRolesRequest(), metadata=bearer, timeout=10)
    seen["me"] = {"valid": me.valid, "username": me.username, "same_user": me.user_id == registered.user.id, "roles": len(mine.roles)}

    refreshed = auth.RefreshToken(iam_pb2.RefreshTokenRequest(refresh_token=registered.token.refresh_token), timeout=10)
    again = auth.ValidateToken(iam_pb2.ValidateTokenRequest(token=refreshed.token.access_token), timeout=10)
    seen["refreshed"] = {"valid": again.valid, "new_refresh_token": refreshed.token.refresh_token != registered.token.refresh_token}

    # What Python's descriptor pool asks reflection for: a file by its name, .proto included.
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    seen["reflected_file"] = pool.FindFileByName("gatehouse/iam/v1/iam.proto").package
    seen["reflected_methods"] = [m.name for m in pool.FindServiceByName("gatehouse.iam.v1.AuthService").methods]

print(json.dumps(seen))
