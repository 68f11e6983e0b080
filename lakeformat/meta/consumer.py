"""`consumer/consumer-<id>`: the next snapshot a streaming consumer will read.

Snapshot expiry never removes a snapshot a consumer still needs (`nextSnapshot` and later).
"""

from __future__ import annotations

import json

from lakeformat.errors import CorruptFileError
from lakeformat.layout import CONSUMER_PREFIX, TablePaths
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map


class ConsumerManager:
    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.paths = TablePaths(file_io, table_path)
        self.consumer_dir = self.paths.consumer_dir

    def consumer_path(self, consumer_id: str) -> str:
        return self.paths.consumer(consumer_id)

    def consumers(self) -> dict[str, int]:
        """consumer id -> nextSnapshot. An unreadable consumer file raises (never ignored:
        ignoring it could let expiry remove the snapshots it pins)."""
        listed = [st.path for st in self.file_io.list_status(self.consumer_dir)
                  if st.path.rsplit("/", 1)[-1].startswith(CONSUMER_PREFIX)]

        def one(path: str) -> int | None:
            try:
                return int(json.loads(self.file_io.read_bytes(path))["nextSnapshot"])
            except FileNotFoundError:
                return None  # removed meanwhile
            except (ValueError, KeyError, TypeError) as e:
                raise CorruptFileError(f"cannot parse consumer file {path}: {e}") from e

        # the files are read at once: each is a round trip on an object store
        return {p.rsplit("/", 1)[-1][len(CONSUMER_PREFIX):]: v
                for p, v in zip(listed, parallel_map(one, listed)) if v is not None}

    def min_next_snapshot(self) -> int | None:
        values = self.consumers().values()
        return min(values) if values else None

    def set(self, consumer_id: str, next_snapshot: int) -> None:
        self.file_io.write_bytes(self.consumer_path(consumer_id),
                                 json.dumps({"nextSnapshot": int(next_snapshot)}).encode())
