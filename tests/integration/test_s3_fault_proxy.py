"""The fault proxy itself (tests/support/fault_proxy.py): a faithful proxy when it is not
injecting, faults of the kind and number asked for, requests counted by verb and operation, the
latency it adds per request, and it stops by itself."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.support.fault_proxy import FaultProxy
from tests.support.s3server import ACCESS_KEY, REGION, SECRET_KEY, boto3_client


@pytest.fixture()
def proxy(s3_server: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server, seed=5) as p:
        yield p


def _client(endpoint: str, attempts: int = 1):  # noqa: ANN202 - a boto3 client
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(retries={"mode": "standard",
                                               "total_max_attempts": attempts}))


def test_forwards_faithfully_over_keep_alive(s3_server: str, s3_bucket: str,
                                             proxy: FaultProxy) -> None:
    c = _client(proxy.endpoint)
    big = bytes(range(256)) * 8192  # 2 MiB: botocore sends "Expect: 100-continue"
    c.put_object(Bucket=s3_bucket, Key="big", Body=big)
    c.put_object(Bucket=s3_bucket, Key="small", Body=b"s", Metadata={"m": "v"})
    assert c.get_object(Bucket=s3_bucket, Key="big")["Body"].read() == big
    head = c.head_object(Bucket=s3_bucket, Key="small")
    assert head["ContentLength"] == 1 and head["Metadata"] == {"m": "v"}
    assert c.get_object(Bucket=s3_bucket, Key="big", Range="bytes=10-19")["Body"].read() \
        == big[10:20]
    with pytest.raises(ClientError, match="NoSuchKey"):
        c.get_object(Bucket=s3_bucket, Key="missing")
    assert [o["Key"] for o in c.list_objects_v2(Bucket=s3_bucket)["Contents"]] == \
        ["big", "small"]
    c.delete_object(Bucket=s3_bucket, Key="small")
    assert proxy.requests == 8 and proxy.forwarded == 8 and proxy.total_faults == 0
    assert proxy.connections == 1  # every request on one kept-alive connection
    # the objects really are in moto
    direct = boto3_client(s3_server).get_object(Bucket=s3_bucket, Key="big")
    assert direct["Body"].read() == big


def test_chunked_request_body(s3_server: str, s3_bucket: str, proxy: FaultProxy) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    chunks = [b"first chunk ", b"second ", b"and the last"]
    for key in ("chunked-1", "chunked-2"):  # two requests on one connection
        conn.request("PUT", f"/{s3_bucket}/{key}", body=iter(chunks), encode_chunked=True,
                     headers={"Transfer-Encoding": "chunked"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
    conn.close()
    assert proxy.connections == 1
    direct = boto3_client(s3_server)
    for key in ("chunked-1", "chunked-2"):
        assert direct.get_object(Bucket=s3_bucket, Key=key)["Body"].read() == b"".join(chunks)


def test_faults_of_each_kind_are_counted(s3_bucket: str, proxy: FaultProxy) -> None:
    c = _client(proxy.endpoint)
    c.put_object(Bucket=s3_bucket, Key="k", Body=b"0123456789")
    expected = {
        "slowdown": "SlowDown", "internal": "InternalError", "bad_gateway": "BadGateway",
        "reset": "Connection was closed", "reset_after": "Connection was closed",
        "reset_body": "reading from response stream",
    }
    for kind, message in expected.items():
        proxy.inject(kind, method="GET", path_contains="/k")
        with pytest.raises(Exception, match=message):
            c.get_object(Bucket=s3_bucket, Key="k")["Body"].read()
    proxy.inject("latency", method="GET")
    assert c.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"0123456789"
    assert proxy.faults == {k: 1 for k in [*expected, "latency"]}
    assert proxy.failed_requests == len(expected)
    assert proxy.pending_scripts == 0
    assert [kind for _, _, kind in proxy.seen] == [None, *expected, "latency"]


def test_random_faults_follow_the_rate(s3_bucket: str, proxy: FaultProxy) -> None:
    c = _client(proxy.endpoint, attempts=1)
    c.put_object(Bucket=s3_bucket, Key="k", Body=b"v")
    proxy.rate = 0.3
    proxy.kinds = {"internal": 1.0}
    failed = 0
    for _ in range(200):
        try:
            c.head_object(Bucket=s3_bucket, Key="k")
        except ClientError:
            failed += 1
    assert failed == proxy.faults["internal"]
    assert 30 <= failed <= 90  # 60 expected


def test_strips_conditional_headers_only_when_asked(s3_bucket: str, proxy: FaultProxy) -> None:
    c = _client(proxy.endpoint)
    c.put_object(Bucket=s3_bucket, Key="k", Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        c.put_object(Bucket=s3_bucket, Key="k", Body=b"2", IfNoneMatch="*")
    proxy.strip_conditional = True
    c.put_object(Bucket=s3_bucket, Key="k", Body=b"3", IfNoneMatch="*")
    c.put_object(Bucket=s3_bucket, Key="k", Body=b"4", IfMatch='"not-the-etag"')
    assert proxy.stripped == 2
    assert c.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"4"


def test_stops_by_itself(s3_server: str) -> None:
    proxy = FaultProxy(s3_server, lifetime=0.3)
    proxy.start()
    port = proxy.port
    deadline = time.monotonic() + 10
    while proxy.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not proxy.running
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/")
    proxy.stop()  # twice is fine


def test_counts_requests_by_verb_and_operation(s3_bucket: str, proxy: FaultProxy) -> None:
    c = _client(proxy.endpoint)
    for key in ("a", "b", "c"):
        c.put_object(Bucket=s3_bucket, Key=key, Body=b"v")
    c.get_object(Bucket=s3_bucket, Key="a")["Body"].read()
    c.head_object(Bucket=s3_bucket, Key="b")
    c.copy_object(Bucket=s3_bucket, Key="d", CopySource={"Bucket": s3_bucket, "Key": "a"})
    c.list_objects_v2(Bucket=s3_bucket, Prefix="")
    c.delete_object(Bucket=s3_bucket, Key="c")
    c.delete_objects(Bucket=s3_bucket, Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
    assert proxy.methods == {"PUT": 4, "GET": 1, "HEAD": 1, "LIST": 1, "DELETE": 1, "POST": 1}
    assert proxy.operations == {"PutObject": 3, "CopyObject": 1, "GetObject": 1,
                                "HeadObject": 1, "ListObjectsV2": 1, "DeleteObject": 1,
                                "DeleteObjects": 1}
    proxy.reset_counters()
    assert proxy.methods == {} and proxy.operations == {}


def test_request_latency_delays_every_request_and_overlaps_connections(
        s3_server: str, s3_bucket: str) -> None:
    boto3_client(s3_server).put_object(Bucket=s3_bucket, Key="k", Body=b"v")
    with FaultProxy(s3_server, request_latency=2.0, lifetime=60) as proxy:
        clients = [_client(proxy.endpoint) for _ in range(2)]
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(lambda c: c.get_object(Bucket=s3_bucket, Key="k")["Body"]
                                   .read(), c) for c in clients]
            while proxy.requests < 2 and not any(f.done() for f in futures):
                time.sleep(0.01)
            # both requests are in the proxy and neither went on: each waits in its own
            # connection's thread, so the two waits overlap
            assert proxy.requests == 2 and proxy.forwarded == 0
            assert [f.result(timeout=30) for f in futures] == [b"v", b"v"]
        assert proxy.forwarded == 2 and proxy.connections == 2
        assert proxy.methods == {"GET": 2} and proxy.total_faults == 0
