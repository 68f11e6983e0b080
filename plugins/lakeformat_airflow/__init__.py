"""lakeformat's Airflow provider: a `lakeformat` connection type and hook, operators for ingest,
merge-schema writes, compaction and the maintenance jobs, a snapshot sensor and its trigger.

Registered through the `apache_airflow_provider` entry point (`get_provider_info` below: the
connection type and its form) and the `airflow.plugins` entry point (`plugin.LakeformatPlugin`:
macros). Importing this package is cheap: no pyarrow, no pyspark, no boto3.
"""

from __future__ import annotations

from typing import Any

from lakeformat.version import __version__

CONN_TYPE = "lakeformat"
DEFAULT_CONN_ID = "lakeformat_default"


def get_provider_info() -> dict[str, Any]:
    """Provider metadata Airflow's ProvidersManager reads (package-name = the distribution)."""
    return {
        "package-name": "lakeformat",
        "name": "lakeformat",
        "description": "Apache Paimon tables on local disk and S3: ingest, merge-schema writes, "
                       "compaction, snapshot expiry, schema-file retention, orphan cleanup.",
        "versions": [__version__],
        "integrations": [{"integration-name": "lakeformat",
                          "external-doc-url": "https://paimon.apache.org/",
                          "tags": ["software"]}],
        "operators": [{"integration-name": "lakeformat",
                       "python-modules": ["lakeformat_airflow.operators.write",
                                          "lakeformat_airflow.operators.compact",
                                          "lakeformat_airflow.operators.maintenance",
                                          "lakeformat_airflow.operators.tags",
                                          "lakeformat_airflow.operators.catalog",
                                          "lakeformat_airflow.operators.due"]}],
        "sensors": [{"integration-name": "lakeformat",
                     "python-modules": ["lakeformat_airflow.sensors.snapshot"]}],
        "triggers": [{"integration-name": "lakeformat",
                      "python-modules": ["lakeformat_airflow.triggers.snapshot",
                                         "lakeformat_airflow.triggers.debt"]}],
        "hooks": [{"integration-name": "lakeformat",
                   "python-modules": ["lakeformat_airflow.hooks.lakeformat"]}],
        "asset-uris": [{"schemes": ["paimon"], "handler": None}],
        "hook-class-names": ["lakeformat_airflow.hooks.lakeformat.LakeformatHook"],
        "connection-types": [{
            "connection-type": CONN_TYPE,
            "hook-class-name": "lakeformat_airflow.hooks.lakeformat.LakeformatHook",
            "hook-name": "lakeformat (Paimon warehouse)",
            "conn-fields": {
                "s3.endpoint": {"label": "S3 endpoint",
                                "description": "e.g. http://minio:9000; empty for AWS",
                                "schema": {"type": ["string", "null"], "format": "url"}},
                "s3.region": {"label": "S3 region", "schema": {"type": ["string", "null"]}},
                "s3.path-style-access": {"label": "S3 path-style access",
                                         "schema": {"type": ["boolean", "null"]}},
                "lock.enabled": {"label": "Commit lock (lock.enabled)",
                                 "schema": {"type": ["boolean", "null"]}},
                "aws_conn_id": {"label": "AWS connection id",
                                "description": "take the S3 credentials from this `aws` "
                                               "connection instead of login/password",
                                "schema": {"type": ["string", "null"]}},
            },
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "port"],
                "relabeling": {"host": "Warehouse URI", "login": "S3 access key",
                               "password": "S3 secret key",
                               "extra": "Catalog options (JSON, Paimon's names)"},
                "placeholders": {"host": "s3://bucket/warehouse, file:///data/wh or /data/wh",
                                 "extra": '{"s3.endpoint": "http://127.0.0.1:9000", '
                                          '"s3.region": "us-east-1"}'},
            },
        }],
    }
