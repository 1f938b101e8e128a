"""Schemathesis hooks for the importgate contract test.

One: the upload takes spreadsheets and NDJSON as the request body itself.
Schemathesis sends `text/*` bodies as text by itself; for the binary
spreadsheet types and the JSON-lines types it needs to be told how: the
generated strings or bytes go on the wire as they are. Two: the key under
test never revokes itself (below).
"""

import os

import schemathesis

schemathesis.serializer.alias(
    [
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.ms-excel",
    ],
    "application/octet-stream",
)
schemathesis.serializer.alias(
    [
        "application/csv",
        "application/x-ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/jsonlines",
    ],
    "text/plain",
)


# The key under test never revokes itself. Schemathesis reuses ids it sees
# in answers (GET /api/keys lists the admin's own key), and once the key
# is revoked every later request is a 401 and the rest of the run tests
# nothing. DELETE /api/keys/{id} keeps being tested with every other id;
# revoking keys is covered by tests/api/errors.rs and console.rs.
OWN_KEY_ID = os.environ.get("IMPORTGATE_CONTRACT_KEY_ID", "")


@schemathesis.hook
def before_call(context, case, kwargs):
    if (
        OWN_KEY_ID
        and case.method.upper() == "DELETE"
        and (case.path_parameters or {}).get("id") == OWN_KEY_ID
    ):
        case.path_parameters["id"] = "key_notthisone"
