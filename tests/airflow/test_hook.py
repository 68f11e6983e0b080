"""The `lakeformat` connection type: provider registration, the hook's catalog from each way
of writing a connection, `aws_conn_id`, the connection test, the plugin's macros."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat_airflow.assets import table_uri
from lakeformat_airflow.hooks import ConnectionConfigError, LakeformatHook


def test_provider_registers_the_connection_type_and_plugin():
    from airflow.plugins_manager import get_plugin_info
    from airflow.providers_manager import ProvidersManager

    pm = ProvidersManager()
    assert "lakeformat" in pm.providers
    hook = pm.hooks["lakeformat"]
    assert hook.hook_class_name == "lakeformat_airflow.hooks.lakeformat.LakeformatHook"
    assert hook.connection_id_attribute_name == "lakeformat_conn_id"
    assert "lakeformat" in pm.field_behaviours
    names = [p["name"] for p in get_plugin_info()]
    assert names.count("lakeformat") == 1  # once, though installed and on the path


def test_catalog_from_a_json_connection(s3_conn):
    uri, options = s3_conn
    lf.Catalog(uri, options=options).create_database("db")
    hook = LakeformatHook()
    catalog = hook.get_catalog()
    assert catalog.warehouse == uri
    assert catalog.options["s3.secret-key"] == options["s3.secret-key"]
    assert catalog.list_databases() == ["db"]
    ok, message = hook.test_connection()
    assert ok and uri in message and "1 database" in message


def test_catalog_from_a_uri_connection_and_extra_warehouse(tmp_path, monkeypatch):
    wh = tmp_path / "wh"
    lf.Catalog(str(wh)).create_database("db")
    monkeypatch.setenv("AIRFLOW_CONN_LF_URI",
                       f"lakeformat://ignored/?warehouse={wh}&lock.enabled=true")
    hook = LakeformatHook("lf_uri")
    assert hook.warehouse() == str(wh)
    assert hook.get_catalog().options["lock.enabled"] == "true"


def test_credentials_from_an_aws_connection(s3_warehouse, monkeypatch, dags):
    uri, options = s3_warehouse
    monkeypatch.setenv("AIRFLOW_CONN_MY_AWS", json.dumps({
        "conn_type": "aws", "login": options["s3.access-key"],
        "password": options["s3.secret-key"],
        "extra": {"region_name": options["s3.region"], "endpoint_url": options["s3.endpoint"]}}))
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", uri, extra={"s3.path-style-access": "true", "aws_conn_id": "my_aws"}))
    catalog = LakeformatHook().get_catalog()
    assert catalog.options["s3.endpoint"] == options["s3.endpoint"]
    assert "aws_conn_id" not in catalog.options
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                         primary_keys=["id"], options={"bucket": "1"})
    assert lf.Catalog(uri, options=options).list_tables("db") == ["t"]


def test_aws_connection_needing_the_amazon_provider_is_refused(monkeypatch, dags):
    monkeypatch.setenv("AIRFLOW_CONN_MY_AWS", json.dumps({
        "conn_type": "aws", "extra": {"role_arn": "arn:aws:iam::1:role/x"}}))
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", "s3://b/wh", extra={"aws_conn_id": "my_aws"}))
    with pytest.raises(ConnectionConfigError, match="role_arn"):
        LakeformatHook().get_catalog()


def test_unknown_catalog_option_in_extra_is_refused(monkeypatch, dags, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", str(tmp_path), extra={"s3.endpont": "http://x"}))
    ok, message = LakeformatHook().test_connection()
    assert not ok and "s3.endpont" in message


def test_asset_uris():
    assert table_uri("s3://bucket/wh/", "db.t") == "paimon://bucket/wh/db/t"
    assert table_uri("/data/wh", "db.t") == "paimon:///data/wh/db/t"
    assert table_uri("file:///data/wh", "db.t") == "paimon:///data/wh/db/t"


def test_writing_operators_declare_the_connection_alias():
    from lakeformat_airflow.operators import (
        LakeformatCompactOperator,
        LakeformatExpireSnapshotsOperator,
        LakeformatIngestOperator,
    )

    ingest = LakeformatIngestOperator(task_id="i", table="db.t", source="x/*.parquet")
    assert [o.name for o in ingest.outlets] == ["lakeformat:lakeformat_default"]
    compact = LakeformatCompactOperator(task_id="c", table="{{ params.t }}",
                                        lakeformat_conn_id="other")
    assert [o.name for o in compact.outlets] == ["lakeformat:other"]
    assert LakeformatExpireSnapshotsOperator(task_id="e", table="db.t").outlets == []


def test_the_secret_is_masked_once_read(s3_warehouse, monkeypatch, dags):
    from airflow.sdk._shared.secrets_masker import redact

    uri, options = s3_warehouse
    secret, token = "lf-hook-secret-71c3e0", "lf-aws-secret-9d2a44"
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", uri, "key", secret, {"s3.region": "us-east-1"}))
    monkeypatch.setenv("AIRFLOW_CONN_MY_AWS", json.dumps({
        "conn_type": "aws", "login": "k2", "password": token}))
    assert LakeformatHook().catalog_config()[1]["s3.secret-key"] == secret
    assert LakeformatHook(aws_conn_id="my_aws").catalog_config()[1]["s3.secret-key"] == token
    assert redact(f"options {secret} and {token}") == "options *** and ***"


def test_macros(local_conn):
    from lakeformat_airflow import plugin

    catalog = lf.Catalog(local_conn)
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                             primary_keys=["id"], options={"bucket": "1"})
    assert plugin.latest_snapshot_id("db.t") is None
    t.write(pa.table({"id": [1]}))
    assert plugin.latest_snapshot_id("db.t") == 1
    assert plugin.table_uri("db.t") == f"paimon://{local_conn}/db/t"
    assert plugin.warehouse() == local_conn
