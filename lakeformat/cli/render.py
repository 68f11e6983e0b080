"""How the CLI prints: aligned tables with a header row for people, one JSON envelope for
scripts.

JSON envelope (every command but `read`'s row stream)::

    {"lakeformat_version": "0.1.0", "command": "snapshots", "result": ...}

Keys are snake_case; an instant is ISO-8601 UTC text (`time`) next to its epoch millis
(`time_millis`).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from lakeformat.errors import is_secret_option
from lakeformat.version import __version__

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def iso_millis(millis: int | None) -> str | None:
    """Epoch millis as '2024-05-01T10:00:00.123Z' (None stays None)."""
    if millis is None:
        return None
    t = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(millis) % 1000:03d}Z"


def iso_local(value: dt.datetime | None) -> str | None:
    """A naive local wall-clock time (Paimon's LocalDateTime: tag and file creation) in UTC."""
    if value is None:
        return None
    aware = value.astimezone(dt.UTC)  # a naive value is read as local time
    return aware.strftime("%Y-%m-%dT%H:%M:%S.") + f"{aware.microsecond // 1000:03d}Z"


def local_millis_iso(millis: int | None) -> str | None:
    """Paimon's 'local wall clock stored as UTC' millis (a data file's creation time), shown
    as the UTC instant it was."""
    if millis is None:
        return None
    naive = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
    return iso_local(naive)


def human_size(n: int | None) -> str:
    """1234567 -> '1.2 MiB' (binary units; bytes exact)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # not reached


def cell(value: Any) -> str:
    """One value as table text: NULL for null, ISO times, text on one line."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{cell(k)}: {cell(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    text = str(value)
    if "\n" in text or "\r" in text or "\t" in text:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r") \
            .replace("\t", "\\t")
    return text


def table_text(headers: Sequence[str], rows: Iterable[Sequence[Any]],
               right: Iterable[int] = ()) -> str:
    """An aligned table: a header row, then one line per row; columns in `right` (numbers)
    are right-aligned. Cells that are not text go through `cell`."""
    texts = [[c if isinstance(c, str) else cell(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in texts:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    right = set(right)
    last = len(headers) - 1

    def line(row: Sequence[str]) -> str:
        parts = []
        for i, c in enumerate(row):
            if i in right:
                parts.append(c.rjust(widths[i]))
            elif i == last:
                parts.append(c)  # no trailing blanks
            else:
                parts.append(c.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in texts)])


def shown_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options as output may show them: secret-bearing values (s3.secret-key, ...) masked."""
    return {k: "***" if is_secret_option(k) else v for k, v in sorted(options.items())}


def pairs_text(pairs: Sequence[tuple[str, Any]]) -> str:
    """'key   value' lines with the values aligned (describe's header block)."""
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k.ljust(width)}  {v if isinstance(v, str) else cell(v)}".rstrip()
                     for k, v in pairs)


def json_default(value: Any) -> Any:
    """JSON for what `json` cannot write: decimals as text (exact), times as ISO text,
    bytes as base64, sets as lists."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def envelope(command: str, result: Any) -> dict[str, Any]:
    return {"lakeformat_version": __version__, "command": command, "result": result}


def emit_json(command: str, result: Any, out: TextIO | None = None) -> None:
    """The one JSON shape of every command's result."""
    stream = out or sys.stdout
    stream.write(json.dumps(envelope(command, result), indent=2, default=json_default,
                            ensure_ascii=False) + "\n")


def emit_text(text: str, out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    stream.write(text.rstrip("\n") + "\n")


def note(text: str) -> None:
    """A remark for people, on stderr (never mixed into the output a script reads)."""
    print(text, file=sys.stderr, flush=True)
