"""Option typos: a catalog option lakeformat does not know stops the command before any
connection is opened; a table option close to a Paimon key is stored with a one-line warning;
a table created without `bucket` is refused naming the fix."""

from __future__ import annotations

import socket
import threading

from tests.cli.conftest import assert_one_line_error, cli_env, lakeformat, lakeformat_main


class Listener:
    """A TCP port on 127.0.0.1 that counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_a_typo_in_a_catalog_option_opens_no_connection():
    listener = Listener()
    try:
        # every AWS client of the process would go to the listener (botocore honours
        # AWS_ENDPOINT_URL): a command that talked to S3 at all would be counted
        env = cli_env({"AWS_ENDPOINT_URL": listener.url, "AWS_ACCESS_KEY_ID": "k",
                       "AWS_SECRET_ACCESS_KEY": "s", "AWS_EC2_METADATA_DISABLED": "true"})
        run = lakeformat("--warehouse", "s3://bucket/wh", "-o", f"s3.endpont={listener.url}",
                         "list-databases", env=env)
    finally:
        listener.close()
    assert_one_line_error(run, 2, "'s3.endpont'", "did you mean 's3.endpoint'")
    assert listener.accepted == 0


def test_table_option_typo_warns_and_a_missing_bucket_is_dynamic(tmp_path):
    wh = ["--warehouse", str(tmp_path / "wh")]
    lakeformat_main(*wh, "create-database", "db").ok()  # in-process (conftest.py)
    columns = ["--columns", "id BIGINT NOT NULL, name STRING", "--primary-key", "id"]
    lakeformat_main(*wh, "create-table", "db.a", "--columns",
                    "dt STRING, id BIGINT NOT NULL, name STRING", "--primary-key", "id",
                    "--partition-key", "dt").ok()  # dynamic bucket, cross-partition upsert
    # the installed script: the warning is what a process prints on its stderr
    typo = lakeformat(*wh, "create-table", "db.b", *columns, "-O", "bucket=1",
                      "-O", "merge-engin=first-row").ok()
    warning = [line for line in typo.err.splitlines() if "warning" in line]
    assert warning == ["lakeformat: warning: table db.b: option 'merge-engin' is not an option "
                       "Paimon reads; did you mean 'merge-engine'? (stored as given)"]
    described = lakeformat_main(*wh, "describe", "db.b", "--json").ok().json()
    assert "merge-engin" in str(described)
    assert lakeformat_main(*wh, "list-tables", "db", "--json").ok().json() == ["a", "b"]
