"""`LakeformatHook`: a `lakeformat` connection as a `lakeformat.Catalog`.

The connection:

* host — the warehouse URI (`s3://bucket/path`, `file:///path` or a plain path); extra
  `warehouse` takes precedence, for connections written as URIs;
* login / password — the S3 access and secret key (`s3.access-key` / `s3.secret-key`);
* extra — catalog options by Paimon's names (`s3.endpoint`, `s3.region`, `lock.enabled`, ...),
  plus `aws_conn_id`: an `aws` connection (the Amazon provider's) to take the credentials from
  instead — its login/password, extra `aws_session_token`, `region_name`, `endpoint_url`.

Every secret value (the password, and any option the library counts as secret: secret keys,
session tokens, JDBC passwords) is registered with Airflow's secrets masker the moment it is
read, so a task log never shows it — not even where a library error would have echoed it;
results (XCom) carry table names and counts, never options. The access key id (the login) is
not a secret — Airflow shows a connection's login in the clear — and is not registered: the
masker blanks every occurrence of a value in every log line, and an access key such as
MinIO's `lakeformat` would blank the bucket, DAG and connection names. Library errors still
never show it.
"""

from __future__ import annotations

import json
from typing import Any

from airflow.sdk import BaseHook

from lakeformat.errors import hides_value
from lakeformat_airflow import CONN_TYPE, DEFAULT_CONN_ID

#: extra keys of the Amazon provider's `aws` connection read here, by catalog option
_AWS_EXTRA = {"aws_session_token": "s3.session-token", "region_name": "s3.region",
              "endpoint_url": "s3.endpoint"}
#: `aws` connection features that need the Amazon provider's credential chain (not used here)
_AWS_UNSUPPORTED = ("role_arn", "assume_role_method", "profile_name", "external_id",
                    "assume_role_kwargs", "session_kwargs")


class ConnectionConfigError(ValueError):
    """A connection lacks what a catalog needs (no warehouse, bad extra, ...)."""


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class LakeformatHook(BaseHook):
    """Builds the `lakeformat.Catalog` of a `lakeformat` connection (see the module docstring).

    `catalog_options` are laid over the connection's (e.g. `{"lock.enabled": "true"}` for one
    task); `aws_conn_id` overrides the connection's extra of that name.
    """

    conn_name_attr = "lakeformat_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = "lakeformat (Paimon warehouse)"

    def __init__(self, lakeformat_conn_id: str = DEFAULT_CONN_ID, *,
                 aws_conn_id: str | None = None,
                 catalog_options: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.lakeformat_conn_id = lakeformat_conn_id
        self.aws_conn_id = aws_conn_id
        self.catalog_options = dict(catalog_options or {})
        self._catalog: Any = None

    # -- connection ---------------------------------------------------------------------------
    def catalog_config(self) -> tuple[str, dict[str, str]]:
        """(warehouse URI, catalog options) from the connection; secrets masked in logs."""
        conn = self.get_connection(self.lakeformat_conn_id)
        extra = dict(conn.extra_dejson or {})
        warehouse = str(extra.pop("warehouse", "") or conn.host or "").strip()
        if not warehouse:
            raise ConnectionConfigError(
                f"connection {self.lakeformat_conn_id!r} names no warehouse: set its host to "
                "the warehouse URI (s3://bucket/path, file:///path or a plain path)")
        aws_conn_id = self.aws_conn_id or extra.pop("aws_conn_id", None)
        extra.pop("aws_conn_id", None)
        options = {str(k): _option_text(v) for k, v in extra.items() if v is not None}
        if conn.login:
            options["s3.access-key"] = conn.login
        if conn.password:
            self._mask(conn.password)
            options["s3.secret-key"] = conn.password
        if aws_conn_id:
            options.update(self._aws_options(str(aws_conn_id)))
        options.update({str(k): _option_text(v) for k, v in self.catalog_options.items()})
        for key, value in options.items():
            if hides_value(key):
                self._mask(value)
        return warehouse, options

    def _aws_options(self, aws_conn_id: str) -> dict[str, str]:
        conn = self.get_connection(aws_conn_id)
        extra = dict(conn.extra_dejson or {})
        unsupported = sorted(k for k in _AWS_UNSUPPORTED if extra.get(k))
        if unsupported:
            raise ConnectionConfigError(
                f"aws connection {aws_conn_id!r} uses {', '.join(unsupported)}, which lakeformat "
                "does not resolve: give the access key and secret (login/password) or leave "
                "them out to use the standard AWS credential variables")
        options: dict[str, str] = {}
        if conn.login:
            options["s3.access-key"] = conn.login
        if conn.password:
            self._mask(conn.password)
            options["s3.secret-key"] = conn.password
        config = extra.get("service_config", {}).get("s3", {}) if isinstance(
            extra.get("service_config"), dict) else {}
        for key, option in _AWS_EXTRA.items():
            value = config.get(key, extra.get(key))
            if value:
                options[option] = str(value)
        return options

    @staticmethod
    def _mask(secret: str) -> None:
        from airflow.sdk.log import mask_secret

        mask_secret(secret)

    # -- catalog -------------------------------------------------------------------------------
    def get_catalog(self) -> Any:
        """The `lakeformat.Catalog` of the connection (built once per hook)."""
        if self._catalog is None:
            import lakeformat as lf

            warehouse, options = self.catalog_config()
            self._catalog = lf.Catalog(warehouse, options=options)
        return self._catalog

    def get_table(self, name: str) -> Any:
        """`lakeformat.Table` `db.table` of the connection's warehouse."""
        return self.get_catalog().get_table(name)

    def warehouse(self) -> str:
        """The warehouse URI, as the catalog normalises it."""
        return self.get_catalog().warehouse

    def test_connection(self) -> tuple[bool, str]:
        """Airflow's "Test" button: open the warehouse and list its databases."""
        try:
            catalog = self.get_catalog()
            databases = catalog.list_databases()
        except Exception as e:  # noqa: BLE001 - the UI shows the reason
            return False, f"{type(e).__name__}: {e}"
        return True, (f"connected to {catalog.warehouse}: {len(databases)} database(s)"
                      + (f" ({', '.join(databases[:10])})" if databases else ""))

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
