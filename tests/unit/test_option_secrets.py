"""A credential pasted into an option that is not secret is never echoed by the error about
that option: every option parser of a catalog (S3, locks, metastore) masks it as `***`."""

from __future__ import annotations

import pytest

import lakeformat as lf
from lakeformat.options import hide_secrets
from lakeformat.storage import get_file_io

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET"
TOKEN = "FwoGZXIvYXdzEJr//////////wEaDTOKEN"
BASE = {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key": "AKIAEXAMPLEACCESS",
        "s3.secret-key": SECRET, "s3.session-token": TOKEN}


@pytest.mark.parametrize("key,value,error", [
    ("s3.path-style-access", SECRET, lf.InvalidOptionError),
    ("s3.attempts.maximum", TOKEN, lf.InvalidOptionError),
    ("lock.enabled", SECRET, lf.InvalidOptionError),
    ("lock.lease-duration", SECRET, lf.InvalidOptionError),
    ("metastore", SECRET, lf.UnsupportedError),
    ("warehouse", SECRET, lf.InvalidOptionError),
])
def test_a_secret_under_another_option_is_masked(key, value, error):
    with pytest.raises(error, match=key) as err:
        lf.Catalog("s3://bucket/wh", options={**BASE, key: value})
    assert value not in str(err.value) and "***" in str(err.value)
    assert value not in repr(err.value)


def test_get_file_io_masks_too():
    with pytest.raises(lf.InvalidOptionError, match="s3.path-style-access") as err:
        get_file_io("s3://bucket/wh", {**BASE, "s3.path-style-access": SECRET})
    assert SECRET not in str(err.value)


def test_values_that_are_not_secrets_are_still_shown():
    with pytest.raises(lf.InvalidOptionError, match="'maybe'"):
        lf.Catalog("s3://bucket/wh", options={**BASE, "s3.path-style-access": "maybe"})


def test_only_whole_values_are_masked():
    assert hide_secrets("got 'abc' in abcdef", ["abc"]) == "got '***' in abcdef"


def test_the_aws_credential_variables_are_masked_too(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    options = {"s3.endpoint": "http://127.0.0.1:9", "lock.lease-duration": SECRET}
    with pytest.raises(lf.InvalidOptionError, match="lock.lease-duration") as err:
        lf.Catalog("s3://bucket/wh", options=options)
    assert SECRET not in str(err.value)


def test_an_access_key_id_is_no_secret_to_hide_elsewhere(monkeypatch):
    """An access key id is shown as Airflow shows a connection's login: hiding its value
    everywhere would blank out every word equal to it (compose's key is `lakeformat`)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "lakeformat-env")
    options = {**BASE, "s3.access-key": "lakeformat", "lock.lease-duration": "lakeformat"}
    with pytest.raises(lf.InvalidOptionError, match="'lakeformat'"):
        lf.Catalog("s3://lakeformat/wh", options=options)
    options = {**BASE, "lock.lease-duration": "lakeformat-env"}
    with pytest.raises(lf.InvalidOptionError, match="'lakeformat-env'"):
        lf.Catalog("s3://lakeformat/wh", options=options)
