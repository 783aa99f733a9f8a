# Schemathesis hooks for `npm run test:contract` (scripts/contract.mjs).
import ast
import os
import sys
import threading
import uuid

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
PASSWORD = os.environ.get("CONTRACT_LOGOUT_PASSWORD", "")

# The service_role run may reach the kept user itself through the admin API (the stateful phase follows
# GET /admin/users into PUT /admin/users/{id}: a ban or a new password; or DELETE). When its sign-in is refused, a new
# user takes its place for the rest of the run; the logout under test is unchanged.
_accounts_lock = threading.Lock()
_accounts = {
    "auth": os.environ.get("CONTRACT_LOGOUT_EMAIL", ""),
    "iam": os.environ.get("CONTRACT_LOGOUT_USERNAME", ""),
}


def _sign_in(kind: str, name: str) -> requests.Response:
    if kind == "auth":
        return requests.post(f"{BASE_URL}/token?grant_type=password", json={"email": name, "password": PASSWORD}, timeout=30)
    return requests.post(f"{BASE_URL}/auth/login", json={"username": name, "password": PASSWORD}, timeout=30)


def _replace(kind: str) -> str:
    suffix = uuid.uuid4().hex[:12]
    if kind == "auth":
        name = f"contract-logout-{suffix}@example.com"
        response = requests.post(f"{BASE_URL}/signup", json={"email": name, "password": PASSWORD}, timeout=30)
    else:
        name = f"contract-logout-{suffix}"
        response = requests.post(
            f"{BASE_URL}/auth/register",
            json={"username": name, "password": PASSWORD, "email": f"contract-iam-logout-{suffix}@example.com"},
            timeout=30,
        )
    response.raise_for_status()
    return name


def _fresh_session(kind: str) -> str:
    def token(response: requests.Response):
        if not response.ok:
            return None
        body = response.json()
        # An IAM account with two-step verification answers second_step, not tokens.
        return body.get("access_token") if kind == "auth" else (body.get("token") or {}).get("access_token")

    with _accounts_lock:
        response = _sign_in(kind, _accounts[kind])
        if token(response) is None and response.status_code != 429:
            print(f"contract hook: the kept {kind} user's sign-in answered {response.status_code}; a new one takes its place", file=sys.stderr)
            _accounts[kind] = _replace(kind)
            response = _sign_in(kind, _accounts[kind])
    response.raise_for_status()
    return token(response)


LOGOUTS = {"/logout": lambda: _fresh_session("auth"), "/auth/logout": lambda: _fresh_session("iam")}


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
