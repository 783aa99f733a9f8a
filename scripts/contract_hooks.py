# Schemathesis hooks for `npm run test:contract` (scripts/contract.mjs).
import ast
import os
import threading

import requests
import schemathesis

# Some CPython releases (3.11.7, which Debian 12 ships, among them) can fail `ast.parse` run in two threads at once
# ("SystemError: AST constructor recursion depth mismatch", python/cpython#106905), and Hypothesis parses source to
# describe its filters while the two workers generate: the run then reports a tool error, not a finding. Parsing one
# at a time avoids it and costs nothing measurable.
_parse = ast.parse
_parse_lock = threading.Lock()


def _serialized_parse(*args, **kwargs):
    with _parse_lock:
        return _parse(*args, **kwargs)


ast.parse = _serialized_parse

# The IAM service's /auth/rpc takes @effect/rpc's NDJSON, which the document describes as text; Schemathesis has no
# serializer for application/ndjson, so it sends such a body as it sends text.
schemathesis.serializer.alias("application/ndjson", "text/plain")

# A run's credentials must stay valid for the whole run: once a logout revokes them, every later call that needs
# them answers 401/403 and the operations behind them go untested. So a logout sent with a run's own credentials is
# sent instead with a fresh session of a user kept for that purpose (CONTRACT_LOGOUT_*), made here for each call.
# The logout itself is tested as generated (same body, query and checks); only whose session it ends differs.
BASE_URL = os.environ.get("CONTRACT_BASE_URL", "")
PROTECTED = {token for token in os.environ.get("CONTRACT_PROTECTED_TOKENS", "").split(",") if token}


def _fresh_auth_session() -> str:
    response = requests.post(
        f"{BASE_URL}/token?grant_type=password",
        json={"email": os.environ["CONTRACT_LOGOUT_EMAIL"], "password": os.environ["CONTRACT_LOGOUT_PASSWORD"]},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()["access_token"]


def _fresh_iam_session() -> str:
    response = requests.post(
        f"{BASE_URL}/auth/login",
        json={"username": os.environ["CONTRACT_LOGOUT_USERNAME"], "password": os.environ["CONTRACT_LOGOUT_PASSWORD"]},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()["token"]["access_token"]


LOGOUTS = {"/logout": _fresh_auth_session, "/auth/logout": _fresh_iam_session}


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    fresh = LOGOUTS.get(case.path) if case.method.upper() == "POST" else None
    if fresh is None or not case.headers:
        return
    header = case.headers.get("Authorization") or case.headers.get("authorization")
    if header is None or not header.startswith("Bearer ") or header[len("Bearer "):] not in PROTECTED:
        return
    case.headers.pop("authorization", None)
    case.headers["Authorization"] = f"Bearer {fresh()}"
