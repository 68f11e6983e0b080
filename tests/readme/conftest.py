"""The moto S3 server the README's `s3` blocks run against (`tests/support/catalogs.py`)."""

from tests.support.catalogs import s3_server  # noqa: F401 - fixture
