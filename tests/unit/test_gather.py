"""`take_rows` gives exactly `Table.take`, whatever the column types, nulls and slicing, and
whether its string columns come through views shared by several threads (`BatchViews`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

from lakeformat.data.gather import MIN_VIEW_ROWS, BatchViews, take_rows


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = [None if i % 11 == 0 else "w" * int(rng.integers(0, 30)) + str(i) + "\u00e9"
             for i in range(n)]
    blobs = [None if i % 13 == 0 else bytes(rng.integers(0, 256, int(rng.integers(0, 20)),
                                                         dtype=np.uint8)) for i in range(n)]
    return pa.table({
        "id": pa.array(rng.integers(0, 1 << 40, n)),
        "s": pa.array(words, pa.string()),
        "s_full": pa.array([f"v{i:07d}" for i in range(n)], pa.string()),
        "b": pa.array(blobs, pa.binary()),
        "big": pa.array(words, pa.large_string()),
        "d": pa.array(words).dictionary_encode(),
        "l": pa.array([[i, i + 1] if i % 3 else None for i in range(n)]),
    })


@pytest.mark.parametrize("n", [10, MIN_VIEW_ROWS, 3 * MIN_VIEW_ROWS + 7])
def test_same_rows_as_take(n: int) -> None:
    table = _table(n, n)
    rng = np.random.default_rng(n + 1)
    for order in (rng.permutation(n), np.sort(rng.integers(0, n, n // 2)),
                  rng.integers(0, n, 2 * n), np.zeros(0, dtype=np.int64)):
        order = order.astype(np.int64)
        got = take_rows(table, order)
        assert got.schema == table.schema
        assert got.equals(table.take(pa.array(order)))


@pytest.mark.parametrize("n", [10, 3 * MIN_VIEW_ROWS + 7])
def test_within_positions_same_rows_as_two_takes(n: int) -> None:
    # a unit's rows (ascending positions in the batch), then their key order
    table = _table(2 * n, n)
    rng = np.random.default_rng(n + 2)
    for within in (np.sort(rng.choice(2 * n, n, replace=False)), np.arange(2 * n),
                   rng.permutation(2 * n)[:n]):
        within = within.astype(np.int64)
        order = rng.permutation(len(within)).astype(np.int64)
        got = take_rows(table, order, within)
        assert got.schema == table.schema
        assert got.equals(table.take(pa.array(within)).take(pa.array(order)))
    chunked = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])
    assert take_rows(chunked, order, within).equals(
        table.take(pa.array(within)).take(pa.array(order)))
    with pytest.raises(IndexError):
        take_rows(table, order, np.full(len(order), 2 * n, dtype=np.int64))
    with pytest.raises(IndexError):
        take_rows(table, np.array([len(within)], dtype=np.int64), within)


def test_sliced_and_chunked_columns() -> None:
    n = 3 * MIN_VIEW_ROWS
    table = _table(2 * n, 7).slice(n // 3, n)  # columns with an offset
    order = np.random.default_rng(3).permutation(n).astype(np.int64)
    assert take_rows(table, order).equals(table.take(pa.array(order)))
    chunked = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])
    assert take_rows(chunked, order).equals(table.take(pa.array(order)))


def test_out_of_range_positions_are_refused() -> None:
    table = _table(MIN_VIEW_ROWS, 1)
    for bad in ([MIN_VIEW_ROWS], [-1]):
        with pytest.raises(IndexError):
            take_rows(table, np.array(bad, dtype=np.int64))


@pytest.mark.parametrize("n", [10, 3 * MIN_VIEW_ROWS + 7])
def test_shared_views_give_the_same_rows_on_several_threads(n: int) -> None:
    # the units of one batch, each gathered on its own thread through the batch's views
    table = _table(4 * n, n)
    views = BatchViews(table)
    rng = np.random.default_rng(n + 3)
    units = np.array_split(rng.permutation(4 * n), 4)
    cases = []
    for rows in units:
        within = np.sort(rows).astype(np.int64)
        cases.append((within, rng.permutation(len(within)).astype(np.int64)))
    cases.append((np.arange(4 * n, dtype=np.int64), rng.permutation(4 * n).astype(np.int64)))
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: take_rows(table, c[1], c[0], views), cases))
    for (within, order), out in zip(cases, got, strict=True):
        assert out.schema == table.schema
        assert out.equals(table.take(pa.array(within)).take(pa.array(order)))
    # a table without some of the columns (given separately) still takes the views it has
    part = table.drop_columns(["id", "b"])
    within, order = cases[0]
    assert take_rows(part, order, within, views).equals(
        part.take(pa.array(within)).take(pa.array(order)))
    # two columns of one name: views are found by name, so neither takes them
    twice = pa.Table.from_arrays([table["s"], table["s_full"]], names=["s", "s"])
    assert take_rows(twice, order, within, views).equals(
        twice.take(pa.array(within)).take(pa.array(order)))


def test_views_of_another_table_are_refused() -> None:
    n = 2 * MIN_VIEW_ROWS
    table = _table(n, 5)
    views = BatchViews(table.slice(0, n - 1))
    order = np.arange(MIN_VIEW_ROWS, dtype=np.int64)
    with pytest.raises(ValueError, match="another table"):
        take_rows(table, order, None, views)
