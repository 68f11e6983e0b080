"""Likely typos in table option names.

Paimon stores any table option key (users keep their own keys there), so an unknown key is
never refused. But a key one or two letters away from one Paimon reads (`merge-engin`,
`bucket-keys`, `fields.b.sequence-grop`) is almost always a typo whose author believes the
option is in force: it gets an `OptionNameWarning` naming the likely key.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable, Mapping

from lakeformat.schema.paimon_option_keys import PAIMON_TABLE_OPTIONS

__all__ = ["OptionNameWarning", "check_option_names", "likely_option_typos"]

#: table options lakeformat itself reads that Paimon does not define
LAKEFORMAT_TABLE_OPTIONS = frozenset(("schema.num-retained.min", "schema.time-retained"))
KNOWN_TABLE_OPTIONS = PAIMON_TABLE_OPTIONS | LAKEFORMAT_TABLE_OPTIONS

#: what may follow `fields.<column>.` (Paimon's per-field options)
FIELD_OPTION_SUFFIXES = frozenset((
    "sequence-group", "aggregate-function", "ignore-retract", "nested-key",
    "nested-key-null-strategy", "nested-sequence-field", "count-limit", "distinct",
    "list-agg-delimiter", "ts-field", "default-value", "stats-mode",
))
FIELDS_PREFIX = "fields."
#: `fields.default-aggregate-function` is a table-level key under the fields prefix
_FIELD_LEVEL_KEYS = frozenset(k for k in KNOWN_TABLE_OPTIONS if k.startswith(FIELDS_PREFIX))
#: similarity (difflib ratio) above which an unknown key is taken for a typo of a known one
_CUTOFF = 0.85


class OptionNameWarning(UserWarning):
    """A table option key that looks like a misspelt Paimon option (it is stored anyway)."""


def _near(word: str, known: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(known), n=1, cutoff=_CUTOFF)
    return found[0] if found else None


def _field_typo(key: str, columns: Iterable[str]) -> str | None:
    """The likely intended key of a `fields.<column>.<suffix>` key, or None when it looks right
    (suffixes with a dot are index and format options lakeformat does not list)."""
    column, dot, suffix = key[len(FIELDS_PREFIX):].rpartition(".")
    if not dot or "." in suffix or not column:
        return None
    names = set(columns)
    if suffix not in FIELD_OPTION_SUFFIXES:
        near = _near(suffix, FIELD_OPTION_SUFFIXES)
        if near is not None:
            return f"{FIELDS_PREFIX}{column}.{near}"
        return None
    if names and column not in names and "," not in column:
        near = _near(column, names)
        if near is not None:
            return f"{FIELDS_PREFIX}{near}.{suffix}"
    return None


def likely_option_typos(options: Mapping[str, str], columns: Iterable[str] = ()
                        ) -> dict[str, str]:
    """{unknown key: the known key it is probably a typo of} for `options`."""
    columns = list(columns)
    out: dict[str, str] = {}
    for key in options:
        if key in KNOWN_TABLE_OPTIONS:
            continue
        if key.startswith(FIELDS_PREFIX) and key not in _FIELD_LEVEL_KEYS:
            near = _field_typo(key, columns)
        else:
            near = _near(key, KNOWN_TABLE_OPTIONS)
        if near is not None and near != key:
            out[key] = near
    return out


def check_option_names(table: str, options: Mapping[str, str], columns: Iterable[str] = ()
                       ) -> dict[str, str]:
    """Warn (`OptionNameWarning`) for each likely typo among `options`; returns them."""
    typos = likely_option_typos(options, columns)
    for key, near in typos.items():
        warnings.warn(f"table {table}: option {key!r} is not an option Paimon reads; did you "
                      f"mean {near!r}? (stored as given)", OptionNameWarning, stacklevel=3)
    return typos
