"""Copy a warehouse written on local disk into the embedded moto S3 server, object by object
(the scale benchmarks build their tables locally, where writing is fast, then measure on S3)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def upload(root: Path, options: dict[str, str], warehouse: str, workers: int = 8) -> int:
    """Every file under `root` put under the `s3://bucket/prefix` of `warehouse`, with the
    endpoint and keys of the catalog `options`; the number of objects."""
    import boto3

    bucket, prefix = warehouse.removeprefix("s3://").split("/", 1)
    client = boto3.client("s3", endpoint_url=options["s3.endpoint"],
                          aws_access_key_id=options["s3.access-key"],
                          aws_secret_access_key=options["s3.secret-key"],
                          region_name=options["s3.region"])
    paths = [Path(d) / n for d, _, ns in os.walk(root) for n in ns]

    def put(p: Path) -> None:
        client.put_object(Bucket=bucket, Key=f"{prefix}/{p.relative_to(root)}",
                          Body=p.read_bytes())

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(put, paths))
    return len(paths)
