"""Helpers shared by more than one test folder, imported as `tests.support.<module>`:
`s3server` (a moto S3 server over HTTP), `pypaimon_helpers` (pypaimon 2.1.0 wrappers; the
interop venv only), `two_streams` (the two-stream partial-update scenario), `memory` (peak
memory of work run in a fresh process) and `postgres` (a real PostgreSQL server and the JDBC
catalog URLs for SQLite and PostgreSQL)."""
