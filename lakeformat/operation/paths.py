"""Where a table's data files live: `<table>/<k=v>/.../bucket-<b>/<file>`, as Java computes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeformat.layout import bucket_dir_name
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.meta.partition import partition_path
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


class PathFactory:
    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.fields = schema.partition_fields()
        opts = CoreOptions(schema.options)
        self.default_name = opts.partition_default_name
        self.legacy_name = opts.partition_legacy_name

    def partition_dir(self, values: Sequence[Any]) -> str:
        rel = partition_path(values, self.fields, self.default_name, self.legacy_name)
        return self.file_io.join(self.table_path, rel) if rel else self.table_path

    def bucket_dir(self, values: Sequence[Any], bucket: int) -> str:
        return self.file_io.join(self.partition_dir(values), bucket_dir_name(bucket))

    def data_file(self, values: Sequence[Any], bucket: int, meta: DataFileMeta) -> str:
        if meta.external_path:
            return meta.external_path
        return self.file_io.join(self.bucket_dir(values, bucket), meta.file_name)
