"""Deletion vectors: which rows of a data file are deleted, kept in `DELETION_VECTORS` index files.

Byte layout, as Java writes it [JAVA DeletionFileWriter, BitmapDeletionVector, DeletionVector.read,
RoaringBitmap32]:

* an index file starts with one version byte, 1, then holds the vectors of several data files
  one after the other;
* one vector: `int32` big-endian size *n*, then *n* bytes: the magic number 1581511376 (`int32`
  big-endian) followed by the row positions as a 32-bit RoaringBitmap in the portable
  serialization (run-optimized before writing), then the CRC-32 of those *n* bytes (`int32`
  big-endian);
* the index manifest entry names, per data file, the offset of its vector's size field, *n*
  (as the length) and the number of deleted rows [JAVA DeletionVectorMeta].

64-bit vectors (`deletion-vectors.bitmap64`, another magic number) are refused by name.
Positions are decoded and encoded container by container with numpy (a container covers 65,536
rows), never row by row.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lakeformat.errors import CommitConflictError, CorruptFileError, UnsupportedError
from lakeformat.meta.index_manifest import (
    ADD,
    DELETION_VECTORS_INDEX,
    DeletionVectorRange,
    IndexManifestEntry,
    IndexManifestFile,
)
from lakeformat.storage import FileIO

VERSION = 1
MAGIC = 1581511376
#: Java's Bitmap64DeletionVector magic, read little-endian
MAGIC_BITMAP64 = 1681511377
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192


# -- portable RoaringBitmap (32-bit) ---------------------------------------------------------------
def decode_bitmap(data: bytes | memoryview, where: str = "deletion vector") -> np.ndarray:
    """Sorted row positions (uint32) of a portable-format RoaringBitmap."""
    buf = memoryview(data)
    try:
        cookie = struct.unpack_from("<I", buf, 0)[0]
        pos = 4
        if cookie & 0xFFFF == _COOKIE_RUN:
            n = (cookie >> 16) + 1
            flag_bytes = (n + 7) // 8
            runs = np.unpackbits(np.frombuffer(buf, np.uint8, flag_bytes, pos),
                                 bitorder="little")[:n].astype(bool)
            pos += flag_bytes
        elif cookie == _COOKIE_NO_RUN:
            n = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
            runs = np.zeros(n, dtype=bool)
        else:
            raise CorruptFileError(f"{where}: not a RoaringBitmap (cookie {cookie})")
        header = np.frombuffer(buf, "<u2", 2 * n, pos).reshape(n, 2) if n else \
            np.zeros((0, 2), np.uint16)
        pos += 4 * n
        if not runs.any() or n >= _NO_OFFSET_THRESHOLD:
            pos += 4 * n  # offsets: the containers follow in order, so they are not needed
        parts = []
        for i in range(n):  # one step per container of 65,536 rows
            base = np.uint32(int(header[i, 0]) << 16)
            card = int(header[i, 1]) + 1
            if runs[i]:
                count = struct.unpack_from("<H", buf, pos)[0]
                pairs = np.frombuffer(buf, "<u2", 2 * count, pos + 2).reshape(count, 2)
                pos += 2 + 4 * count
                starts = pairs[:, 0].astype(np.uint32)
                lengths = pairs[:, 1].astype(np.int64) + 1
                offsets = np.arange(int(lengths.sum()), dtype=np.uint32) - np.repeat(
                    (np.cumsum(lengths) - lengths).astype(np.uint32), lengths)
                low = np.repeat(starts, lengths) + offsets
            elif card <= _ARRAY_MAX:
                low = np.frombuffer(buf, "<u2", card, pos).astype(np.uint32)
                pos += 2 * card
            else:
                bits = np.unpackbits(np.frombuffer(buf, np.uint8, _BITMAP_BYTES, pos),
                                     bitorder="little")
                low = np.flatnonzero(bits).astype(np.uint32)
                pos += _BITMAP_BYTES
            if len(low) != card:
                raise CorruptFileError(f"{where}: a container holds {len(low)} values, its "
                                       f"header says {card}")
            parts.append(low + base)
    except (struct.error, ValueError) as e:
        raise CorruptFileError(f"{where}: truncated RoaringBitmap ({e})") from None
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def encode_bitmap(positions: np.ndarray) -> bytes:
    """The portable serialization of a RoaringBitmap of `positions`, containers chosen as Java's
    `runOptimize` leaves them (a run container only when strictly smaller)."""
    values = np.unique(np.asarray(positions, dtype=np.int64))
    if len(values) and (values[0] < 0 or values[-1] > 0x7FFFFFFF):
        raise ValueError("deletion vector positions must be within 0..2147483647")
    values = values.astype(np.uint32)
    highs = (values >> 16).astype(np.uint16)
    keys, starts = np.unique(highs, return_index=True)
    bounds = [*starts.tolist(), len(values)]
    containers: list[tuple[int, int, bool, bytes]] = []
    for i, key in enumerate(keys.tolist()):
        low = (values[bounds[i]:bounds[i + 1]] & 0xFFFF).astype(np.uint16)
        card = len(low)
        breaks = np.flatnonzero(np.diff(low.astype(np.int32)) != 1) + 1
        run_starts = np.concatenate(([0], breaks))
        run_ends = np.concatenate((breaks, [card]))
        run_size = 2 + 4 * len(run_starts)
        plain_size = 2 * card if card <= _ARRAY_MAX else _BITMAP_BYTES
        if run_size < plain_size:
            pairs = np.empty((len(run_starts), 2), dtype="<u2")
            pairs[:, 0] = low[run_starts]
            pairs[:, 1] = run_ends - run_starts - 1
            body = struct.pack("<H", len(run_starts)) + pairs.tobytes()
            containers.append((key, card, True, body))
        elif card <= _ARRAY_MAX:
            containers.append((key, card, False, low.astype("<u2").tobytes()))
        else:
            bits = np.zeros(1 << 16, dtype=np.uint8)
            bits[low] = 1
            containers.append((key, card, False, np.packbits(bits, bitorder="little").tobytes()))
    n = len(containers)
    has_run = any(c[2] for c in containers)
    if has_run:
        flags = np.packbits(np.array([c[2] for c in containers], dtype=np.uint8),
                            bitorder="little").tobytes()
        head = struct.pack("<I", _COOKIE_RUN | ((n - 1) << 16)) + flags
    else:
        head = struct.pack("<II", _COOKIE_NO_RUN, n)
    head += b"".join(struct.pack("<HH", k, card - 1) for k, card, _, _ in containers)
    if not has_run or n >= _NO_OFFSET_THRESHOLD:
        offset = len(head) + 4 * n
        for _, _, _, body in containers:
            head += struct.pack("<I", offset)
            offset += len(body)
    return head + b"".join(body for _, _, _, body in containers)


# -- one vector, framed ----------------------------------------------------------------------------
def serialize_vector(positions: np.ndarray) -> bytes:
    """One framed vector: size, magic + bitmap, CRC-32."""
    data = struct.pack(">i", MAGIC) + encode_bitmap(positions)
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def frame_cardinality(frame: bytes | memoryview) -> int:
    """Deleted rows of one framed vector, from its bitmap's container headers alone."""
    buf = memoryview(frame)[8:]  # past size and magic
    cookie = struct.unpack_from("<I", buf, 0)[0]
    if cookie & 0xFFFF == _COOKIE_RUN:
        n = (cookie >> 16) + 1
        pos = 4 + (n + 7) // 8
    else:
        n = struct.unpack_from("<I", buf, 4)[0]
        pos = 8
    header = np.frombuffer(buf, "<u2", 2 * n, pos)
    return int(header[1::2].astype(np.int64).sum()) + n


def deserialize_vector(frame: bytes | memoryview, where: str, length: int | None = None
                       ) -> np.ndarray:
    """Positions of one framed vector (`frame` starts at its size field)."""
    buf = memoryview(frame)
    if len(buf) < 8:
        raise CorruptFileError(f"{where}: truncated deletion vector")
    size, magic = struct.unpack_from(">ii", buf, 0)
    if magic != MAGIC:
        if struct.unpack("<i", struct.pack(">i", magic))[0] == MAGIC_BITMAP64:
            raise UnsupportedError(f"{where}: 64-bit deletion vectors "
                                   "(deletion-vectors.bitmap64=true) are not supported")
        raise CorruptFileError(f"{where}: bad deletion vector magic number {magic}")
    if length is not None and size != length:
        raise CorruptFileError(f"{where}: deletion vector is {size} bytes, its index manifest "
                               f"entry says {length}")
    if len(buf) < 8 + size:
        raise CorruptFileError(f"{where}: truncated deletion vector")
    data = bytes(buf[4:4 + size])
    crc = struct.unpack_from(">I", buf, 4 + size)[0]
    if crc != zlib.crc32(data):
        raise CorruptFileError(f"{where}: deletion vector checksum mismatch")
    return decode_bitmap(memoryview(data)[4:], where)


# -- index files ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeletionFile:
    """Where one data file's deletion vector sits (Java's `DeletionFile`)."""

    index_file: str  # the index file's name, in the table's `index/` directory
    path: str  # its full path
    offset: int
    length: int
    cardinality: int | None

    @property
    def identity(self) -> tuple[str, int]:
        return (self.index_file, self.offset)


def deletion_files(index_file: IndexManifestFile, entries: Sequence[IndexManifestEntry]
                   ) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
    """Per (partition, bucket), the deletion file of each data file that has one."""
    out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    for e in entries:
        if e.index_type != DELETION_VECTORS_INDEX:
            continue
        path = index_file.index_file_path(e)
        files = out.setdefault((e.partition, e.bucket), {})
        for r in e.dv_ranges or ():
            files[r.data_file] = DeletionFile(e.file_name, path, r.offset, r.length,
                                              r.cardinality)
    return out


def read_deleted(file_io: FileIO, deletion: DeletionFile) -> np.ndarray:
    """Deleted row positions of one data file, sorted."""
    frame = file_io.read_range(deletion.path, deletion.offset, deletion.length + 8)
    return deserialize_vector(frame, deletion.path, deletion.length)


def write_index_file(index_file: IndexManifestFile, partition: bytes, bucket: int,
                     vectors: Mapping[str, bytes]) -> IndexManifestEntry:
    """A new DELETION_VECTORS index file holding framed `vectors` (data file name -> frame,
    as `serialize_vector` returns or as copied from another index file)."""
    out = bytearray([VERSION])
    ranges = []
    for data_file, frame in vectors.items():
        size = struct.unpack_from(">i", frame, 0)[0]
        cardinality = frame_cardinality(frame)
        ranges.append(DeletionVectorRange(data_file, len(out), size, cardinality))
        out += frame
    name = index_file.new_index_file_name()
    index_file.file_io.write_bytes(index_file.file_io.join(index_file.index_dir, name),
                                   bytes(out))
    return IndexManifestEntry(ADD, partition, bucket, DELETION_VECTORS_INDEX, name, len(out),
                              len(ranges), tuple(ranges))


def frames_of(file_io: FileIO, path: str, ranges: Sequence[DeletionVectorRange]
              ) -> dict[str, bytes]:
    """The framed vectors of some ranges of one index file, as stored."""
    data = file_io.read_bytes(path)
    if data[:1] != bytes([VERSION]):
        raise UnsupportedError(f"{path}: deletion vector index file version "
                               f"{data[:1].hex() or 'missing'} (only {VERSION} is supported)")
    return {r.data_file: data[r.offset:r.offset + 8 + r.length] for r in ranges}


class DeletedRows:
    """The deleted positions of the data files of one split, read when a file is opened."""

    def __init__(self, file_io: FileIO, files: Mapping[str, DeletionFile]):
        self.file_io = file_io
        self.files = files

    def __call__(self, data_file: str) -> np.ndarray | None:
        deletion = self.files.get(data_file)
        return None if deletion is None else read_deleted(self.file_io, deletion)


# -- commits -------------------------------------------------------------------------------------
def check_deletions_seen(live: Sequence[IndexManifestEntry],
                         seen: Mapping[str, tuple[str, int] | None], table_path: str) -> None:
    """Refuse a rewrite of data files whose deletion vectors changed since it read them."""
    now: dict[str, tuple[str, int]] = {}
    for e in live:
        if e.index_type == DELETION_VECTORS_INDEX:
            for r in e.dv_ranges or ():
                now[r.data_file] = (e.file_name, r.offset)
    changed = sorted(f for f, ident in seen.items() if now.get(f) != ident)
    if changed:
        raise CommitConflictError(
            f"{table_path}: another commit changed the deletion vectors of "
            f"{', '.join(changed[:3])}{' …' if len(changed) > 3 else ''} since this "
            "compaction read them; run it again")


def prune_deletion_vectors(live: Sequence[IndexManifestEntry], removed: set[str],
                           index_file: IndexManifestFile) -> list[IndexManifestEntry] | None:
    """The index without the deletion vectors of `removed` data files: an index file holding
    only theirs is dropped, one holding others too is rewritten with the others (their bytes
    copied as stored). None when no vector of `removed` is in the index."""
    if not removed:
        return None
    out: list[IndexManifestEntry] = []
    touched = False
    for e in live:
        ranges = e.dv_ranges or ()
        if e.index_type != DELETION_VECTORS_INDEX or not any(
                r.data_file in removed for r in ranges):
            out.append(e)
            continue
        touched = True
        kept = [r for r in ranges if r.data_file not in removed]
        if kept:
            frames = frames_of(index_file.file_io, index_file.index_file_path(e), kept)
            out.append(write_index_file(index_file, e.partition, e.bucket, frames))
    return out if touched else None
