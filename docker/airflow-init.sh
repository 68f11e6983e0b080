#!/usr/bin/env bash
# One-shot set-up of the compose stack's Airflow (the `airflow-init` service), run after the
# image's entrypoint has waited for the metadata DB:
#
# 1. `airflow db migrate` — here rather than through the entrypoint's _AIRFLOW_DB_MIGRATE, which
#    ignores a failed migration; a failure must stop the stack, since every other Airflow
#    service waits for this one to succeed.
# 2. The admin's password for Airflow 3's default auth manager (SimpleAuthManager). It reads
#    users from [core] simple_auth_manager_users and passwords from the JSON file
#    [core] simple_auth_manager_passwords_file, generating a random password for a user the file
#    lacks. Writing AIRFLOW_ADMIN_PASSWORD there (on the volume the API server mounts) gives the
#    user a known password; a changed password is written again on the next `up`.
# 3. The connections the DAGs use, in the metadata DB (so Admin -> Connections lists, edits and
#    tests them): every INIT_CONN_<ID> variable holds one as Airflow's connection JSON, added
#    as connection <id> (lower case) when the DB has none of that id. One that exists is kept
#    as it is, so an edit made in the UI survives the next `up`.
set -euo pipefail

airflow db migrate

python - <<'PY'
import json
import os
from pathlib import Path

path = Path(os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
user = os.environ["AIRFLOW_ADMIN_USER"]
password = os.environ["AIRFLOW_ADMIN_PASSWORD"]
if not password:
    raise SystemExit("AIRFLOW_ADMIN_PASSWORD is empty: give the Airflow admin a password")
passwords = json.loads(path.read_text() or "{}") if path.exists() else {}
passwords[user] = password
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps(passwords) + "\n")
path.chmod(0o660)
print(f"Airflow admin user {user!r}: password set from AIRFLOW_ADMIN_PASSWORD")
PY

# All INIT_CONN_* connections in one `airflow connections import` (one interpreter, not two per
# connection): without --overwrite it adds the ids the DB lacks and leaves the others alone —
# for each of those it prints "Could not import connection <id>: connection already exists.",
# which on a second `up` is the expected outcome, not an error (the line above says so too).
conns_file=$(mktemp --suffix=.json)
trap 'rm -f "$conns_file"' EXIT
python - "$conns_file" <<'PY'
import json
import os
import sys

conns = {}
for var in sorted(v for v in os.environ if v.startswith("INIT_CONN_")):
    try:
        conns[var[len("INIT_CONN_"):].lower()] = json.loads(os.environ[var])
    except ValueError as e:
        raise SystemExit(f"{var} is not Airflow's connection JSON: {e}")
with open(sys.argv[1], "w") as f:
    json.dump(conns, f)
print(f"Airflow connections {', '.join(conns) or '(none)'}: added where missing; one that "
      "exists is kept (edit it in Admin -> Connections; delete it there to have it made again "
      "from its INIT_CONN_<ID>)")
PY
airflow connections import "$conns_file"
