"""Reading input files (Parquet, CSV, newline-delimited JSON) as a table's rows.

Values are parsed straight into the table's column types, never guessed first and cast after:
`01234`, `1.50` or `2024-01-02` in a STRING column stay exactly that text, `1.50` in a
DECIMAL(10, 2) column stays 1.50. The CLI's `write`/`delete`, the Airflow ingest operators
and the Spark ingest read files through here; this module only reads, and its caller writes
the rows (`Table.write`), so nothing here calls back into a table.

* Columns the table has but the file lacks stay absent; a column the table lacks is an error
  naming it (merge-schema evolution takes Arrow data, not files).
* CSV nulls follow Spark's CSV reader: an empty field is NULL in every column; a quoted empty
  field (`""`) is the empty string in a STRING column (NULL in others). `NA`, `NULL`, `nan` are
  ordinary values (a STRING keeps them; a number column refuses `NULL`).
* JSON: one object per line; a file holding one top-level array of objects is read too (each
  element is a row; errors then name the element). Values must have the column's JSON kind: a
  STRING column takes strings only (`1234` unquoted is an error, not "1234"); DATE takes
  `"yyyy-mm-dd"`, TIME `"hh:mm:ss[.fff]"`, TIMESTAMP ISO-8601 text, DECIMAL numbers or strings.
* An unparseable value is an `InputFileError` naming the file, the line (1-based; a CSV's
  header is line 1) and the column. The fast path is vectorized pyarrow; the line is only
  searched for once a read has failed.
* BINARY/VARBINARY and MAP columns (and nested types in CSV) are refused: read them from
  Parquet.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InputFileError, InvalidArgumentError, UnsupportedError
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import STRING_ROOTS, DataField, DataType, from_arrow, to_arrow
from lakeformat.storage import FileIO, get_file_io

FORMATS = {"parquet": "parquet", "pq": "parquet", "csv": "csv", "json": "json",
           "jsonl": "json", "ndjson": "json"}
_BOM = b"\xef\xbb\xbf"
_MAX_NAMES = 10


class TableLocation(Protocol):
    """Where a table lives (a `lakeformat.Table` is one): its files read S3 input with the
    table's S3 settings."""

    path: str
    file_io: FileIO


class HasTableSchema(Protocol):
    """A target whose `table_schema` gives the columns (a `lakeformat.Table`)."""

    @property
    def table_schema(self) -> TableSchema: ...


#: what `read_file` takes as the target columns
Target = pa.Schema | TableSchema | HasTableSchema


def read_file(path: str, format: str | None = None, *, schema: Target,
              file_io: FileIO | None = None, allow_extra: bool = False) -> pa.Table:
    """Rows of one file with the target types of `schema` (a pyarrow Schema, a lakeformat
    `Table` or `TableSchema`). `format` is parquet, csv or json (default: from the extension);
    `file_io` reads the file (default: local disk, or S3 with the standard AWS variables).

    `allow_extra=True` (for a merge-schema write, which adds them to the table) keeps columns
    the schema lacks, with the types pyarrow infers for them, after the known ones.
    """
    fields = _target_fields(schema)
    fmt = _format_of(path, format)
    io_ = file_io or get_file_io(path, {})
    data = io_.read_bytes(path)
    if fmt == "parquet":
        return _read_parquet(path, data, fields, allow_extra)
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if fmt == "csv":
        return _CsvFile(path, data, fields, allow_extra).read()
    return _JsonFile(path, data, fields, allow_extra).read()


def expand_paths(paths: str | Sequence[str], file_io: FileIO | None = None) -> list[str]:
    """The files `paths` names: plain paths as given, glob patterns (`*`, `?`, `[...]` in the
    file name) expanded in sorted order; `InputFileError` when nothing matches."""
    names = [paths] if isinstance(paths, str) else list(paths)
    files: list[str] = []
    for p in names:
        io_ = file_io or get_file_io(p, {})
        files += _expand(io_, p) if any(ch in p.rsplit("/", 1)[-1] for ch in "*?[") else [p]
    if not files:
        raise InputFileError(f"no input files match {names}")
    return files


def read_files(paths: str | Sequence[str], format: str | None = None, *, schema: Target,
               file_io: FileIO | None = None, allow_extra: bool = False) -> pa.Table:
    """`read_file` over several files and glob patterns (`*`, `?`, `[...]` in the file name),
    concatenated; a column absent from some files is null in their rows."""
    files = expand_paths(paths, file_io)
    tables = [read_file(f, format, schema=schema, file_io=file_io, allow_extra=allow_extra)
              for f in files]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def source_file_io(table: TableLocation, path: str) -> FileIO:
    """How input files are read for `table`: S3 files with the table's S3 settings (endpoint,
    credentials) when the table lives on S3, anything else with the local file system (or S3
    with the standard AWS variables)."""
    if path.startswith(("s3://", "s3a://")) and table.path.startswith(("s3://", "s3a://")):
        return table.file_io
    return get_file_io(path, {})


def read_source(table: TableLocation, source: str | Sequence[str], format: str | None = None,
                *, schema: Target, allow_extra: bool = False) -> pa.Table:
    """The rows of the files `source` names (paths, glob patterns), read in whole for a
    write into `table` (S3 files with its S3 settings) with `schema`'s types (usually the table
    itself); `allow_extra=True` for a merge-schema write. A missing file is an
    `InputFileError` naming it. The caller writes the rows."""
    first = source if isinstance(source, str) else (list(source) or [""])[0]
    try:
        return read_files(source, format, schema=schema, file_io=source_file_io(table, first),
                          allow_extra=allow_extra)
    except FileNotFoundError as e:
        raise InputFileError(f"input file {e.filename or e} does not exist") from None


def _expand(file_io: FileIO, pattern: str) -> list[str]:
    folder, _, name = pattern.rpartition("/")
    found = sorted(st.path for st in file_io.list_status(folder or ".")
                   if fnmatch.fnmatchcase(st.path.rsplit("/", 1)[-1], name))
    if not found:
        raise InputFileError(f"no input files match {pattern!r}")
    return found


# -- targets and columns -------------------------------------------------------------------------
def _target_fields(schema: Target) -> dict[str, DataType]:
    if isinstance(schema, pa.Schema):
        try:
            return {f.name: from_arrow(f.type, f.nullable) for f in schema}
        except UnsupportedError as e:
            raise UnsupportedError(f"target schema: {e}") from None
    inner = getattr(schema, "table_schema", schema)  # a Table, or a TableSchema itself
    fields = getattr(inner, "fields", None)
    if fields is None or not all(isinstance(f, DataField) for f in fields):
        raise InvalidArgumentError(f"schema must be a pyarrow Schema, a lakeformat Table or "
                                   f"TableSchema, got {type(schema).__name__}")
    return {f.name: f.type for f in fields}


def _format_of(path: str, format: str | None) -> str:
    text = (format or path.rsplit("/", 1)[-1].rsplit(".", 1)[-1]).lower()
    if text not in FORMATS:
        raise InputFileError(f"{path}: unknown input format {text!r}; give one of parquet, csv, "
                             "json (newline-delimited)")
    return FORMATS[text]


def _names(names: Sequence[str]) -> str:
    shown = [n[:40] for n in names[:_MAX_NAMES]]
    return f"{shown}" + (f" and {len(names) - _MAX_NAMES} more" if len(names) > _MAX_NAMES else "")


def _check_columns(path: str, given: Sequence[str], fields: dict[str, DataType],
                   allow_extra: bool = False) -> None:
    dupes = sorted({c for c in given if list(given).count(c) > 1})
    if dupes:
        raise InputFileError(f"{path}: duplicate columns {_names(dupes)}")
    extra = [c for c in given if c not in fields]
    if extra and not allow_extra:
        raise InputFileError(f"{path}: columns {_names(extra)} are not in the table (table "
                             f"columns: {list(fields)})")


def _refuse(path: str, fields: dict[str, DataType], present: Sequence[str],
            bad: Callable[[DataType], bool], what: str) -> None:
    for name in present:
        if bad(fields[name]):
            raise UnsupportedError(f"{path}: column {name!r} is {fields[name]}, which {what} "
                                   "cannot carry exactly; read it from Parquet")


def _reason(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _json_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:80] + "..."


def _bad_value(path: str, where: str, name: str, dt: DataType, shown: str,
               reason: str) -> InputFileError:
    """`shown`: the value as the file spells it (repr of CSV text, JSON text)."""
    if len(shown) > 90:
        shown = shown[:90] + "..."
    return InputFileError(f"{path}: {where}, column {name!r}: cannot read {shown} as {dt}"
                          + (f" ({reason})" if reason else ""))


_JSON_KINDS = re.compile(r"changed from (\w+) to (\w+)")


def _json_reason(e: Exception) -> str:
    reason = _reason(e).removeprefix("JSON parse error: ")
    m = _JSON_KINDS.search(reason)
    return f"expected a JSON {m.group(1)}, got a {m.group(2)}" if m else reason


def _first_failing(n: int, fails: Callable[[int, int], bool]) -> int | None:
    """Index of the first of `n` items whose half fails to convert (bisection, each step one
    vectorized read of half the remaining rows); None when no part fails on its own."""
    lo, hi = 0, n
    if n == 0 or not fails(lo, hi):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(lo, mid):
            hi = mid
        else:
            lo = mid
    return lo


# -- parquet --------------------------------------------------------------------------------------
def _read_parquet(path: str, data: bytes, fields: dict[str, DataType], allow_extra: bool
                  ) -> pa.Table:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as e:
        raise InputFileError(f"{path}: not a readable Parquet file ({_reason(e)})") from None
    _check_columns(path, table.column_names, fields, allow_extra)
    cols = []
    for name in table.column_names:
        col = table[name]
        target = to_arrow(fields[name]) if name in fields else col.type
        if not col.type.equals(target):
            try:
                col = col.cast(target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InputFileError(f"{path}: column {name!r} of type {col.type} cannot be "
                                     f"read as {fields[name]} ({_reason(e)})") from None
        cols.append(col)
    return pa.table(cols, names=table.column_names)


# -- csv ------------------------------------------------------------------------------------------
_CSV_COLUMN = re.compile(r"In CSV column #(\d+)")


class _CsvFile:
    def __init__(self, path: str, data: bytes, fields: dict[str, DataType], allow_extra: bool):
        self.path, self.data, self.fields, self.allow_extra = path, data, fields, allow_extra

    def read(self) -> pa.Table:
        self.header = self._header()
        _check_columns(self.path, self.header, self.fields, self.allow_extra)
        _refuse(self.path, self.fields, [n for n in self.header if n in self.fields],
                lambda t: t.is_nested or t.root in ("BINARY", "VARBINARY"), "CSV")
        strings = [n for n in self.header if self._is_string(n)]
        others = [n for n in self.header if n not in strings]
        try:
            try:
                table = self._read(self.header, quoted_null=not strings)
            except pa.ArrowInvalid as e:
                if not (strings and others):
                    raise self._locate(e, quoted_null=not strings) from None
                # maybe a quoted "" in a non-string column: NULL there but "" in STRING
                # columns (Spark's rule), which one pyarrow read cannot do
                try:
                    a = self._read(strings, quoted_null=False)
                    b = self._read(others, quoted_null=True)
                except pa.ArrowInvalid as e2:
                    raise self._locate(e2, quoted_null=True) from None
                table = pa.table([a[n] if n in strings else b[n] for n in self.header],
                                 names=self.header)
        except pa.ArrowException as e:
            raise InputFileError(f"{self.path}: not a readable CSV file ({_reason(e)})") from None
        known = [n for n in self.fields if n in self.header]
        return table.select(known + [n for n in self.header if n not in self.fields])

    def _is_string(self, name: str) -> bool:
        return name in self.fields and self.fields[name].root in STRING_ROOTS

    def _header(self) -> list[str]:
        try:
            text = io.TextIOWrapper(io.BytesIO(self.data), encoding="utf-8", newline="")
            for row in csv.reader(text):
                if row:
                    return row
        except (UnicodeDecodeError, csv.Error) as e:
            raise InputFileError(f"{self.path}: not a UTF-8 CSV file ({_reason(e)})") from None
        raise InputFileError(f"{self.path}: empty CSV file (no header line)")

    def _options(self, columns: Sequence[str], quoted_null: bool,
                 types: dict[str, pa.DataType] | None = None) -> Any:
        import pyarrow.csv as pcsv

        return pcsv.ConvertOptions(
            column_types=types or {n: to_arrow(self.fields[n]) for n in columns
                                   if n in self.fields},
            include_columns=list(columns), null_values=[""], strings_can_be_null=True,
            quoted_strings_can_be_null=quoted_null)

    def _read(self, columns: Sequence[str], quoted_null: bool,
              types: dict[str, pa.DataType] | None = None, data: bytes | None = None
              ) -> pa.Table:
        import pyarrow.csv as pcsv

        return pcsv.read_csv(pa.BufferReader(self.data if data is None else data),
                             convert_options=self._options(columns, quoted_null, types))

    def _locate(self, e: Exception, quoted_null: bool) -> InputFileError:
        """The file, line and column of the value pyarrow could not convert (`quoted_null`:
        whether a quoted "" is NULL in the failing read's non-string columns)."""
        m = _CSV_COLUMN.search(str(e))
        if not m or int(m.group(1)) >= len(self.header) \
                or self.header[int(m.group(1))] not in self.fields:
            return self._locate_parse_error(e)
        name = self.header[int(m.group(1))]
        dt = self.fields[name]
        if self._is_string(name):  # text that is not UTF-8
            return self._locate_parse_error(e, name)
        raw = self._read([name], quoted_null, {name: pa.string()})[name].combine_chunks()
        target = to_arrow(dt)

        def fails(lo: int, hi: int) -> bool:
            part = raw.slice(lo, hi - lo)
            quoted = pc.binary_join_element_wise(
                '"', pc.replace_substring(part, '"', '""'), '"', "").fill_null("")
            text = "\n".join(['"c"', *quoted.to_pylist()]).encode() + b"\n"
            try:
                self._read(["c"], quoted_null, {"c": target}, data=text)
            except pa.ArrowInvalid:
                return True
            return False

        row = _first_failing(len(raw), fails)
        reason = re.sub(r"^In CSV column #\d+: ", "", _reason(e))
        reason = reason.rsplit(f"CSV conversion error to {target}: ", 1)[-1]
        reason = "" if reason.startswith("invalid value") else reason
        if row is None:
            return InputFileError(f"{self.path}: column {name!r}: cannot read a value as {dt}"
                                  f" ({_reason(e)})")
        return _bad_value(self.path, f"line {self._line_of_record(row)}", name, dt,
                          repr(raw[row].as_py()), reason)

    def _records(self) -> Any:
        """(first line, fields) of every data record, as pyarrow counts them (blank lines
        skipped), on the error path only."""
        text = io.TextIOWrapper(io.BytesIO(self.data), encoding="utf-8", newline="")
        reader = csv.reader(text)
        last = 0
        header_seen = False
        for row in reader:
            first, last = last + 1, reader.line_num
            if not row:
                continue
            if not header_seen:
                header_seen = True
                continue
            yield first, row

    def _line_of_record(self, index: int) -> int | str:
        for i, (line, _) in enumerate(self._records()):
            if i == index:
                return line
        return f"record {index + 1}"

    def _locate_parse_error(self, e: Exception, column: str | None = None) -> InputFileError:
        where = f"column {column!r}: " if column else ""
        try:
            for line, row in self._records():
                if len(row) != len(self.header):
                    return InputFileError(f"{self.path}: line {line}: {len(row)} fields, the "
                                          f"header has {len(self.header)}")
        except (UnicodeDecodeError, csv.Error) as e2:
            return InputFileError(f"{self.path}: {where}not a readable UTF-8 CSV file "
                                  f"({_reason(e2)})")
        return InputFileError(f"{self.path}: {where}not a readable CSV file ({_reason(e)})")


# -- json -----------------------------------------------------------------------------------------
_JSON_COLUMN = re.compile(r"Column\(/([^)/]*)")


class _JsonFile:
    def __init__(self, path: str, data: bytes, fields: dict[str, DataType], allow_extra: bool):
        self.path, self.fields, self.allow_extra = path, fields, allow_extra
        self.unit = "line"
        stripped = data.lstrip()
        if stripped.startswith(b"["):
            data = self._array_to_lines(stripped)
            self.unit = "element"
        self.data = data

    def _array_to_lines(self, data: bytes) -> bytes:
        """A top-level JSON array as one element per line, each element's text kept verbatim
        (numbers are not re-printed); raw newlines only occur between tokens in JSON."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputFileError(f"{self.path}: not UTF-8 JSON ({_reason(e)})") from None
        decoder = json.JSONDecoder()
        out, pos, n = [], 1, 0
        while True:
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
            if pos < len(text) and text[pos] == "]" and n == 0:
                pos += 1
                break
            try:
                _, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                raise InputFileError(f"{self.path}: element {n + 1} of the top-level array is "
                                     f"not valid JSON ({e.msg} at char {e.pos})") from None
            out.append(text[pos:end].replace("\r", " ").replace("\n", " "))
            n += 1
            pos = end
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == "]":
                pos += 1
                break
            raise InputFileError(f"{self.path}: top-level array not closed after element {n}")
        if text[pos:].strip():
            raise InputFileError(f"{self.path}: text after the top-level array")
        return "\n".join(out).encode() + b"\n"

    def _read_type(self, dt: DataType) -> pa.DataType:
        return pa.string() if dt.root in ("DATE", "TIME") else to_arrow(dt)

    def _read(self, data: bytes, fields: dict[str, DataType], unexpected: str) -> pa.Table:
        import pyarrow.json as pjson

        schema = pa.schema([(n, self._read_type(t)) for n, t in fields.items()])
        return pjson.read_json(
            pa.BufferReader(data), read_options=pjson.ReadOptions(block_size=32 << 20),
            parse_options=pjson.ParseOptions(explicit_schema=schema,
                                             unexpected_field_behavior=unexpected))

    def read(self) -> pa.Table:
        mentioned = [n for n in self.fields if self._mentions(n)]
        _refuse(self.path, self.fields, mentioned,
                lambda t: t.root in ("BINARY", "VARBINARY", "MAP") or any(
                    c.root in ("BINARY", "VARBINARY", "MAP") for c in _children(t)), "JSON")
        try:
            table = self._read(self.data, self.fields, "infer")
        except pa.ArrowInvalid as e:
            m = _JSON_COLUMN.search(str(e))
            if m and m.group(1) not in self.fields:
                _check_columns(self.path, [m.group(1)], self.fields, self.allow_extra)
            raise self._locate(e) from None
        except pa.ArrowException as e:
            raise InputFileError(f"{self.path}: not a readable JSON file ({_reason(e)})") from None
        _check_columns(self.path, table.column_names, self.fields, self.allow_extra)
        present = [n for n in self.fields
                   if table[n].null_count < table.num_rows or n in mentioned]
        extra = [n for n in table.column_names if n not in self.fields]
        cols = [self._convert(n, table[n]) for n in present] + [table[n] for n in extra]
        return pa.table(cols, names=present + extra)

    def _mentions(self, name: str) -> bool:
        """Whether `name` occurs as an object key anywhere (a JSON string followed by ':' is
        always a key). False positives only keep an all-null column."""
        key = json.dumps(name).encode()
        return re.search(re.escape(key) + rb"\s*:", self.data) is not None

    def _convert(self, name: str, col: pa.ChunkedArray) -> pa.ChunkedArray:
        dt = self.fields[name]
        if dt.root not in ("DATE", "TIME"):
            return col
        arr = col.combine_chunks()

        def convert(part: pa.Array) -> pa.Array:
            if dt.root == "DATE":
                return pc.cast(part, pa.date32())
            stamped = pc.binary_join_element_wise("1970-01-01T", part, "")
            return pc.cast(pc.cast(stamped, pa.timestamp("ms")), to_arrow(dt))

        try:
            return pa.chunked_array([convert(arr)])
        except pa.ArrowInvalid:
            def fails(lo: int, hi: int) -> bool:
                try:
                    convert(arr.slice(lo, hi - lo))
                except pa.ArrowInvalid:
                    return True
                return False

            row = _first_failing(len(arr), fails)
            where = self._where(row) if row is not None else "a value"
            value = arr[row].as_py() if row is not None else None
            raise _bad_value(self.path, where, name, dt, _json_text(value),
                             "not a yyyy-mm-dd date" if dt.root == "DATE"
                             else "not an hh:mm:ss[.fff] time") from None

    def _lines(self) -> list[tuple[int, bytes]]:
        return [(i + 1, line) for i, line in enumerate(self.data.split(b"\n")) if line.strip()]

    def _where(self, row: int) -> str:
        lines = self._lines()
        if self.unit == "element":
            return f"element {row + 1}"
        return f"line {lines[row][0]}" if row < len(lines) else f"row {row + 1}"

    def _locate(self, e: Exception) -> InputFileError:
        lines = self._lines()

        def fails(lo: int, hi: int) -> bool:
            try:
                self._read(b"\n".join(ln for _, ln in lines[lo:hi]) + b"\n", self.fields,
                           "ignore")
            except pa.ArrowException:
                return True
            return False

        row = _first_failing(len(lines), fails)
        if row is None:
            return InputFileError(f"{self.path}: not a readable JSON file ({_reason(e)})")
        where = self._where(row)
        line = lines[row][1]
        try:
            obj = json.loads(line)
        except ValueError as e2:
            return InputFileError(f"{self.path}: {where}: not valid JSON ({_reason(e2)})")
        if not isinstance(obj, dict):
            return InputFileError(f"{self.path}: {where}: expected a JSON object, got "
                                  f"{_json_text(obj)}")
        for name in obj:
            if name not in self.fields:
                continue
            try:
                self._read(line + b"\n", {name: self.fields[name]}, "ignore")
            except pa.ArrowException as e3:
                return _bad_value(self.path, where, name, self.fields[name],
                                  _json_text(obj[name]), _json_reason(e3))
        return InputFileError(f"{self.path}: {where}: {_reason(e)}")


def _children(dt: DataType) -> list[DataType]:
    direct = [t for t in (dt.element, dt.key, dt.value) if t is not None]
    direct += [f.type for f in dt.fields]
    return [d for t in direct for d in (t, *_children(t))]
