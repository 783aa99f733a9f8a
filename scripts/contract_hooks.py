# Schemathesis hooks for `npm run test:contract` (scripts/contract.mjs).
#
# The IAM service's /auth/rpc takes @effect/rpc's NDJSON, which the document describes as text; Schemathesis has no
# serializer for application/ndjson, so it sends such a body as it sends text.
import schemathesis

schemathesis.serializer.alias("application/ndjson", "text/plain")
