"""Avro data files: reading them into Arrow tables, and counting their rows.

Two decoders, one result. A file whose record holds only primitive columns (boolean, int, long,
float, double, string, bytes, each maybe ``["null", T]``; logical types ride on these, so dates,
times, timestamps and decimals qualify) has its blocks read and decompressed here, and a run of
many blocks is decoded by ``avro_columns``: numpy passes over all rows of the run per field,
with no Python per row (the only Python loop steps through the rows of all blocks at once, see
``_row_starts``). Any other file (arrays, maps, nested rows, other unions), and a run of few
blocks, goes through fastavro, handed a header whose schema has no logical types (values stay
plain numbers), one Python dict per record. Either way the raw columns become lakeformat's
Arrow types through whole-column casts (``_finish``).
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view

from lakeformat.data.avro_schema import (
    CODECS,
    MAGIC,
    decompress,
    paimon_type,
    same_shape,
    varint,
)
from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.schema.types import STRING_ROOTS, DataType, to_arrow

__all__ = ["avro_columns", "avro_row_count", "iter_avro", "primitive_plan"]

#: rows per decode step (bounds memory, not results)
_MAX_READ_ROWS = 65536
#: decompressed block bytes decoded together by the vectorized decoder at most (held about
#: three times over while decoded)
_GROUP_BYTES = 16 << 20
#: blocks a run needs for the vectorized decoder (its Python steps are per row of a block)
_MIN_LANES = 8


# -- the container ------------------------------------------------------------------------------

class _Header:
    """An Avro container's header, read from ``stream`` (left at the first block)."""

    def __init__(self, stream: Any, path: str) -> None:
        try:
            head = fastavro.schemaless_reader(stream, fastavro.read.HEADER_SCHEMA, None)
        except Exception as e:
            raise CorruptFileError(f"data file {path}: damaged Avro header: {type(e).__name__}: "
                                   f"{e}") from e
        if head["magic"] != MAGIC:
            raise CorruptFileError(f"data file {path} is not an Avro file (bad magic bytes)")
        self.sync = head["sync"]
        self.codec = head["meta"].get("avro.codec", b"null").decode()
        if self.codec not in CODECS:
            raise UnsupportedError(f"data file {path}: Avro codec {self.codec!r} is not supported "
                                   f"(supported: {', '.join(CODECS)})")
        self.schema = json.loads(head["meta"]["avro.schema"])
        if not isinstance(self.schema, dict) or self.schema.get("type") != "record":
            raise CorruptFileError(f"data file {path}: its Avro schema is not a record")

    def plain(self, codec: str | None = None) -> bytes:
        """This header with every logical type dropped from its schema (and ``codec``, when
        given, for its own)."""
        meta = [(b"avro.codec", (codec or self.codec).encode()),
                (b"avro.schema", json.dumps(_plain(self.schema)).encode())]
        out = bytearray(MAGIC) + varint(len(meta))
        for k, v in meta:
            out += varint(len(k)) + k + varint(len(v)) + v
        return bytes(out + b"\x00" + self.sync)


def _plain(t: Any) -> Any:
    if isinstance(t, list):
        return [_plain(x) for x in t]
    if isinstance(t, dict):
        return {k: _plain(v) for k, v in t.items()
                if k not in ("logicalType", "precision", "scale")}
    return t


class _Stream(io.RawIOBase):
    """``head``, then what ``source`` (anything with ``read(n)``) holds."""

    def __init__(self, source: Any, head: bytes = b"") -> None:
        self._head = head
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            data, self._head = self._head[:len(b)], self._head[len(b):]
        else:
            data = self._source.read(len(b))
        b[:len(data)] = data
        return len(data)


def _buffered(source: Any, head: bytes = b"") -> io.BufferedReader:
    return io.BufferedReader(_Stream(source, head), 1 << 20)


def _read_long(stream: Any, path: str) -> int | None:
    """The zigzag varint at ``stream`` (a block header's), None at the end of the file."""
    shift = z = 0
    while True:
        b = stream.read(1)
        if not b:
            if shift:
                raise CorruptFileError(f"data file {path} ends inside an Avro block header")
            return None
        z |= (b[0] & 0x7F) << shift
        shift += 7
        if b[0] < 0x80:
            return (z >> 1) ^ -(z & 1)


def _block_frame(stream: Any, header: _Header, path: str) -> tuple[int, bytes] | None:
    """(rows, compressed bytes) of the next block, None after the last."""
    count = _read_long(stream, path)
    if count is None:
        return None
    size = _read_long(stream, path)
    if size is None or count < 0 or size < 0:
        raise CorruptFileError(f"data file {path}: damaged Avro block header")
    data = stream.read(size)
    if len(data) != size or stream.read(16) != header.sync:
        raise CorruptFileError(f"data file {path}: an Avro block is cut short or its sync "
                               "marker is wrong")
    return count, data


def avro_row_count(source: Any, path: str) -> int:
    """Rows of an Avro data file from its block headers (block data is skipped, not decoded)."""
    stream = _buffered(source)
    header = _Header(stream, path)
    rows = 0
    while (block := _block_frame(stream, header, path)) is not None:
        rows += block[0]
    return rows


# -- the vectorized decoder -----------------------------------------------------------------------
#
# Rows follow one another in a block, so where row i starts is known only once row i - 1 is
# skipped; blocks, though, start at known places. ``_row_starts`` walks all the blocks of a run
# at once: step i moves every block's cursor past its row i, each field a few numpy operations
# on the cursors (a varint ends past its first byte below 0x80, found in a window of 10 bytes).
# The Python loop runs once per row of the largest block (Java and lakeformat close blocks at
# 64000 bytes), whatever the number of blocks, so a run of many blocks costs little per row and
# a run of few is left to fastavro. With the starts known, each field is decoded for all rows
# at once by ``_field``, and every row must end where the next one starts.

#: Avro primitive kinds the vectorized decoder reads, and the Arrow type each becomes
_KINDS = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
          "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
_WIDTH = {"boolean": 1, "float": 4, "double": 8}
_FLOAT = {"float": "<f4", "double": "<f8"}


def primitive_plan(schema: dict[str, Any]) -> list[tuple[str, str, bool]] | None:
    """(name, Avro kind, nullable) of each field of the record ``schema`` when every field is a
    primitive the vectorized decoder reads (maybe as ``["null", T]``), else None."""
    plan = []
    for f in schema.get("fields", ()):
        t = f.get("type")
        nullable = isinstance(t, list)
        if nullable:
            if len(t) != 2 or t[0] != "null":
                return None
            t = t[1]
        if isinstance(t, dict):
            t = t.get("type")
        if not isinstance(t, str) or t not in _KINDS:
            return None
        plan.append((f["name"], t, nullable))
    return plan


_TEN = np.arange(10)
_SHIFTS = np.arange(0, 35, 7)


def _varint_ends(more: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where the varints starting at ``at`` end: past their first byte below 0x80 (``more``:
    whether each of the 10 bytes from a position is 0x80 or above; garbage for a varint over
    10 bytes: what decodes there is checked later)."""
    return at + 1 + more[at].argmin(axis=1)


def _skip_lengths(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where the strings or bytes whose length varints start at ``at`` end (read as if no
    length were negative or over 34 bits: what decodes there is checked later)."""
    z = buf[at]
    if len(z) and z.max() < 0x80:  # every length below 64: one byte
        return at + 1 + (z >> 1)
    window = buf[at[:, None] + _TEN[:5]]
    size = (window >= 0x80).argmin(axis=1)
    low = (window & 0x7F).astype(np.int64) << _SHIFTS
    z = np.where(_TEN[:5] <= size[:, None], low, 0).sum(axis=1)
    return at + 1 + size + (z >> 1)


def _skip_program(plan: list[tuple[str, str, bool]]) -> list[tuple[int, Any]]:
    """``plan`` as steps that move cursors past a record: (0, n) adds n; (1, None) skips a
    varint; (2, None) a length and its bytes; (3, table) adds ``table[union index]`` (a
    nullable fixed-width value); (4, None) a nullable varint; (5, None) a nullable length and
    its bytes."""
    steps: list[tuple[int, Any]] = []
    for _, kind, nullable in plan:
        width = _WIDTH.get(kind)
        if width is not None and nullable:
            table = np.ones(256, np.int64)
            table[2] += width
            steps.append((3, table))
        elif width is not None and steps and steps[-1][0] == 0:
            steps[-1] = (0, steps[-1][1] + width)
        else:
            code = 0 if width is not None else 1 if kind in ("int", "long") else 2
            steps.append((code + 3 * (nullable and code > 0), width))
    return steps


def _row_starts(buf: np.ndarray, size: int, plan: list[tuple[str, str, bool]],
                block_starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Where each row starts, given where each block starts and how many rows it holds (all
    blocks hold rows). A cursor that leaves the data stops at ``size``: what decodes at these
    starts is checked, not trusted."""
    half = buf >> 1  # a union index: 0 for null, 1 before a value
    more = sliding_window_view(buf >= 0x80, 10)
    steps = _skip_program(plan)
    order = np.argsort(-counts, kind="stable")
    left = counts[order]
    lanes = np.searchsorted(-left, -np.arange(int(left[0])), side="left")
    cursor = block_starts[order].astype(np.int64)
    starts = np.empty((int(left[0]), len(counts)), np.int64)
    for i, k in enumerate(lanes.tolist()):
        pos = cursor[:k]
        starts[i, :k] = pos
        for code, arg in steps:
            if code == 0:
                pos = pos + arg
            elif code == 1:
                pos = _varint_ends(more, pos)
            elif code == 2:
                pos = np.minimum(_skip_lengths(buf, pos), size)
            elif code == 3:
                pos = pos + arg[buf[pos]]
            elif code == 4:
                pos = _varint_ends(more, pos + half[pos])
            else:
                at = pos + 1
                pos = np.where(half[pos] == 0, at, np.minimum(_skip_lengths(buf, at), size))
        cursor[:k] = np.minimum(pos, size)
    by_block = starts.T[np.argsort(order, kind="stable")]
    return by_block[np.arange(by_block.shape[1]) < counts[:, None]]


def _varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag varints starting at ``at``: their values (int64) and where each ends (a
    round per byte, each over the varints that have it)."""
    b = buf[at]
    z = (b & 0x7F).astype(np.uint64)
    after = at + 1
    more = np.flatnonzero(b >= 0x80)
    shift = 7
    while len(more):
        if shift > 63:
            raise ValueError("an Avro varint runs over 10 bytes")
        b = buf[after[more]]
        z[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[more] += 1
        more = more[b >= 0x80]
        shift += 7
    return (z >> np.uint64(1)).astype(np.int64) ^ -(z & np.uint64(1)).astype(np.int64), after


def _field(buf: np.ndarray, at: np.ndarray, kind: str, keep: bool) -> tuple[Any, np.ndarray]:
    """Values of the ``kind`` fields starting at ``at`` (None unless ``keep``; a string or
    bytes field as (lengths, data starts)) and where each field ends."""
    width = _WIDTH.get(kind)
    if width is not None:
        if not keep:
            return None, at + width
        if kind == "boolean":
            return buf[at] != 0, at + 1
        raw = sliding_window_view(buf, width)[at]
        return raw.view(_FLOAT[kind]).reshape(-1), at + width
    values, after = _varints(buf, at)
    if kind == "int" and len(values) and (values.min() < -(1 << 31)
                                          or values.max() >= 1 << 31):
        raise ValueError("an Avro int is out of the int range")
    if kind in ("int", "long"):
        return (values.astype(np.int32) if kind == "int" else values) if keep else None, after
    if len(values) and values.min() < 0:
        raise ValueError("an Avro string or bytes value has a negative length")
    return (values, after) if keep else None, after + values


def _arrow(buf: np.ndarray, kind: str, values: Any, rows: np.ndarray | None, n: int
           ) -> pa.Array:
    """An Arrow array of ``n`` values from those ``_field`` read of the rows ``rows`` (all when
    None; the others are null; strings and bytes come for all rows, in order, null ones empty).
    """
    bitmap, nulls = None, 0
    if rows is not None and len(rows) < n:
        valid = np.zeros(n, bool)
        valid[rows] = True
        bitmap, nulls = pa.py_buffer(np.packbits(valid, bitorder="little")), n - len(rows)
    if kind in ("string", "bytes"):
        # the whole buffer as 2n - 1 values: each row's string, then the bytes up to the next
        lengths, starts = values
        bounds = np.empty(2 * n, np.int64)
        bounds[0::2] = starts
        bounds[1::2] = starts + lengths
        big = bounds[-1] >= 1 << 31
        whole = pa.Array.from_buffers(pa.large_binary() if big else pa.binary(), 2 * n - 1, [
            None, pa.py_buffer(bounds if big else bounds.astype(np.int32)), pa.py_buffer(buf)])
        picked = whole.take(pa.array(np.arange(0, 2 * n, 2)))
        if big:
            picked = picked.cast(pa.binary())
        arr = pa.Array.from_buffers(_KINDS[kind], n, [bitmap, *picked.buffers()[1:]],
                                    null_count=nulls)
        if kind == "string":
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid as e:
                raise ValueError(f"an Avro string is not UTF-8: {e}") from e
        return arr
    if nulls:
        full = np.zeros(n, values.dtype)
        full[rows] = values
        values = full
    if kind == "boolean":
        return pa.array(values, pa.bool_(), mask=None if not nulls else ~valid)
    return pa.Array.from_buffers(_KINDS[kind], n, [bitmap, pa.py_buffer(values)],
                                 null_count=nulls)


def avro_columns(blocks: list[bytes], counts: list[int], plan: list[tuple[str, str, bool]],
                 wanted: set[str]) -> dict[str, pa.Array]:
    """The columns ``wanted`` of the rows in ``blocks`` (decompressed, holding ``counts`` rows
    each) of records ``plan`` (``primitive_plan``), as plain Arrow arrays (ints, floats,
    strings, bytes). Raises ValueError when the bytes are not such rows."""
    rows_in = np.array(counts, np.int64)
    sizes = np.array([len(b) for b in blocks], np.int64)
    block_ends = np.cumsum(sizes)
    used = rows_in > 0  # a block of no rows holds no bytes to read
    rows_in, block_ends = rows_in[used], block_ends[used]
    block_starts = block_ends - sizes[used]
    n, size = int(rows_in.sum()), int(sizes.sum())
    if not n:
        return {name: pa.array([], _KINDS[kind]) for name, kind, _ in plan if name in wanted}
    # zeros after the data: cursors read past it (in damaged data a union index moves one
    # up to 138 bytes a field, see _row_starts) without leaving the buffer
    buf = np.frombuffer(b"".join(blocks) + bytes(160 * (len(plan) + 2)), np.uint8)
    starts = _row_starts(buf, size, plan, block_starts, rows_in)
    pos, read = starts.copy(), []
    for name, kind, nullable in plan:
        rows = None
        if nullable:
            tags = buf[pos]
            pos += 1
            if not np.all((tags == 0) | (tags == 2)):
                raise ValueError("an Avro union index is neither 0 nor 1")
            rows = np.flatnonzero(tags)
            values, after = _field(buf, pos[rows], kind, name in wanted)
            if values is not None and kind in ("string", "bytes"):
                lengths, at = np.zeros(n, np.int64), pos.copy()
                lengths[rows], at[rows] = values
                values = (lengths, at)
            pos[rows] = after
        else:
            values, pos = _field(buf, pos, kind, name in wanted)
        if pos.max() > size:
            raise ValueError("an Avro record runs past its block")
        if name in wanted:
            read.append((name, kind, values, rows))
    expected = np.empty(n, np.int64)
    expected[:-1] = starts[1:]
    expected[np.cumsum(rows_in) - 1] = block_ends
    if not np.array_equal(pos, expected):
        raise ValueError("an Avro block's bytes are not the records it says it holds")
    return {name: _arrow(buf, kind, values, rows, n) for name, kind, values, rows in read}


def _iter_blocks(stream: Any, header: _Header, path: str, plan: list[tuple[str, str, bool]],
                 wanted: list[str], dts: list[DataType], batch_bytes: int
                 ) -> Iterator[pa.Table]:
    """``iter_avro`` a run of blocks at a time: by ``avro_columns`` when the run has blocks
    enough to pay for its steps, by fastavro otherwise."""
    group = max(1 << 20, min(_GROUP_BYTES, batch_bytes // 4))
    raw_schema = pa.schema([(c, _raw_type(dt)) for c, dt in zip(wanted, dts, strict=True)])
    frame: tuple[int, bytes] | None = (0, b"")
    first = True
    while frame is not None:
        blocks: list[bytes] = []
        counts: list[int] = []
        nbytes = 0
        while nbytes < group and (frame := _block_frame(stream, header, path)) is not None:
            blocks.append(decompress(header.codec, frame[1], path))
            counts.append(frame[0])
            nbytes += len(blocks[-1])
        if not blocks and not first:
            return
        first = False
        if len(blocks) >= _MIN_LANES:
            try:
                raw = avro_columns(blocks, counts, plan, set(wanted))
            except ValueError as e:
                raise CorruptFileError(f"data file {path}: {e}") from e
            table = pa.table([raw[c] for c in wanted], names=list(wanted)).cast(raw_schema)
        else:
            container = header.plain("null") + b"".join(
                varint(c) + varint(len(b)) + b + header.sync
                for c, b in zip(counts, blocks, strict=True))
            records = list(fastavro.reader(io.BytesIO(container)))
            table = pa.Table.from_pylist(records, schema=raw_schema)
            del records
        del blocks
        out = _finished(table, wanted, dts)
        per_row = max(1.0, (out.nbytes + table.nbytes) / max(1, out.num_rows))
        step = max(1024, min(_MAX_READ_ROWS, int(batch_bytes / 2 / per_row)))
        for pos in range(0, max(1, out.num_rows), step):
            yield out.slice(pos, step)


# -- fastavro, and what both decoders share ------------------------------------------------------

def _finished(raw: pa.Table, wanted: list[str], dts: list[DataType]) -> pa.Table:
    """Decoded plain values as lakeformat's Arrow types."""
    cols = [_finish(c.combine_chunks(), dt) for c, dt in zip(raw.columns, dts, strict=True)]
    return pa.Table.from_arrays(cols, names=list(wanted))


def _iter_fastavro(stream: Any, header: _Header, wanted: list[str], dts: list[DataType],
                   batch_bytes: int) -> Iterator[pa.Table]:
    """``iter_avro`` by fastavro's records (any schema lakeformat reads)."""
    raw = pa.schema([(c, _raw_type(dt)) for c, dt in zip(wanted, dts, strict=True)])
    reader = fastavro.reader(_buffered(stream, header.plain()))
    step, first = 8192, True
    while True:
        records = list(itertools.islice(reader, step))
        if not records and not first:
            return
        first = False
        table = pa.Table.from_pylist(records, schema=raw)
        del records
        out = _finished(table, wanted, dts)
        per_row = max(1.0, (out.nbytes + table.nbytes) / max(1, out.num_rows))
        step = max(1024, min(_MAX_READ_ROWS, int(batch_bytes / 2 / per_row)))
        yield out
        if not out.num_rows:
            return


def iter_avro(source: Any, path: str, choose: Callable[[list[str]], list[str]],
              types: dict[str, DataType] | None, batch_bytes: int = 64 << 20,
              vectorized: bool = True) -> Iterator[pa.Table]:
    """Tables of an Avro data file's columns picked by ``choose`` (given the file's column
    names), each about ``batch_bytes`` of Arrow memory at most: rows are decoded a bounded
    number at a time. ``types``: the Paimon type of columns (the schema the file was written
    with); a column without one gets the type its Avro schema says. ``vectorized=False``
    decodes through fastavro even when the vectorized decoder could."""
    stream = _buffered(source)
    header = _Header(stream, path)
    by_name = {f["name"]: f["type"] for f in header.schema["fields"]}
    wanted = choose(list(by_name))
    dts = []
    for c in wanted:
        dt = (types or {}).get(c)
        if dt is None:
            dt = paimon_type(by_name[c])
        elif not same_shape(by_name[c], dt):
            raise CorruptFileError(f"data file {path}: column {c!r} is Avro "
                                   f"{json.dumps(by_name[c])}, which does not hold {dt}")
        dts.append(dt)
    plan = primitive_plan(header.schema) if vectorized else None
    if plan is None:
        yield from _iter_fastavro(stream, header, wanted, dts, batch_bytes)
    else:
        yield from _iter_blocks(stream, header, path, plan, wanted, dts, batch_bytes)


def _raw_type(dt: DataType) -> pa.DataType:
    """The Arrow type fastavro's plain values (no logical types) go into."""
    r = dt.root
    if r in ("TINYINT", "SMALLINT", "INT", "DATE", "TIME"):
        return pa.int32()
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pa.int64()
    if r == "DECIMAL":
        return pa.binary()
    if r == "ARRAY":
        return pa.list_(_raw_type(dt.element))  # type: ignore[arg-type]
    if r == "MAP" and dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
        return pa.map_(pa.string(), _raw_type(dt.value))  # type: ignore[arg-type]
    if r == "MAP":
        return pa.list_(pa.struct([("key", _raw_type(dt.key)),  # type: ignore[arg-type]
                                   ("value", _raw_type(dt.value))]))  # type: ignore[arg-type]
    if r == "ROW":
        return pa.struct([(f.name, _raw_type(f.type)) for f in dt.fields])
    return to_arrow(dt)


def _decimals(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Big-endian two's complement unscaled values (at most 16 bytes) as decimal128."""
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], np.int32, count=arr.offset + n + 1)[arr.offset:]
    data = np.frombuffer(arr.buffers()[2] or b"\x00", np.uint8)
    lens = np.diff(offs).astype(np.int64)
    if n and lens.max() > 16:
        raise CorruptFileError(f"a decimal value of {int(lens.max())} bytes does not fit "
                               f"{target}")
    first = data[np.minimum(offs[:-1], max(len(data) - 1, 0))] if len(data) else np.zeros(n)
    negative = (lens > 0) & (first >= 0x80)
    mat = np.where(negative, 0xFF, 0).astype(np.uint8)[:, None].repeat(16, axis=1)
    rows = np.repeat(np.arange(n), lens)
    within = np.arange(int(lens.sum())) - np.repeat(offs[:-1] - offs[0], lens)
    mat[rows, 16 - lens[rows] + within] = data[offs[0]:offs[-1]]
    le = np.ascontiguousarray(mat[:, ::-1])
    validity = arr.buffers()[0] if arr.offset == 0 else None
    if arr.offset and arr.null_count:
        validity = pa.py_buffer(np.packbits(arr.is_valid().to_numpy(zero_copy_only=False),
                                                    bitorder="little"))
    return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(le)],
                                 null_count=arr.null_count)


def _finish(arr: pa.Array, dt: DataType) -> pa.Array:
    """Raw decoded values as the Arrow type lakeformat uses for ``dt``."""
    target = to_arrow(dt)
    r = dt.root
    mask = arr.is_null() if arr.null_count else None
    if r == "DECIMAL":
        return _decimals(arr, target)
    if r == "ROW":
        children = [_finish(arr.field(i), f.type) for i, f in enumerate(dt.fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if r == "ARRAY":
        return pa.ListArray.from_arrays(arr.offsets, _finish(arr.values, dt.element),  # type: ignore[arg-type]
                                        type=target, mask=mask)
    if r == "MAP":
        if dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
            keys, items = arr.keys, arr.items
        else:
            keys, items = arr.values.field("key"), arr.values.field("value")
        return pa.MapArray.from_arrays(arr.offsets, _finish(keys, dt.key.copy(False)),  # type: ignore[union-attr]
                                       _finish(items, dt.value), type=target, mask=mask)  # type: ignore[arg-type]
    if r == "TIMESTAMP_LTZ":
        return arr.cast(pa.timestamp(target.unit)).cast(target)
    return arr if arr.type.equals(target) else arr.cast(target)
