"""Fixtures of the integration suite: the moto S3 server, fresh buckets and catalogs shared with
the Spark suite (`tests/support/catalogs.py` documents them)."""

from tests.support.catalogs import (  # noqa: F401 - fixtures
    catalog,
    local_catalog,
    s3_bucket,
    s3_server,
    s3_warehouse,
)
