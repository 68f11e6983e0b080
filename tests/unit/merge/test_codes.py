"""Java's comparators as int64 codes: one order for keys, sequence fields and max/min."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakeformat.merge.codes import float_codes, float_from_codes, order_codes, ordering_codes
from lakeformat.merge.sort import key_column
from lakeformat.schema.types import double, float_

# Double.compare order: -0.0 below 0.0, every NaN equal and above +inf
JAVA_ORDER = [-np.inf, -1.5, -1e-30, -0.0, 0.0, 1e-30, 1.5, np.inf, np.nan]


@pytest.mark.parametrize("dtype,paimon", [(np.float64, double()), (np.float32, float_())])
def test_float_codes_follow_java_compare(dtype, paimon):
    values = np.array(JAVA_ORDER, dtype=dtype)
    codes = float_codes(pa.array(values))
    assert (np.diff(codes) > 0).all()
    other_nan = np.array([np.nan], dtype=dtype).view(np.int64 if dtype == np.float64 else np.int32)
    other_nan = (other_nan | 1).view(dtype)  # another NaN payload: still one value
    assert float_codes(pa.array(other_nan))[0] == codes[-1]
    # the same codes reach keys (sort.key_column) and max/min (order_codes)
    assert key_column(pa.array(values)).to_numpy().tolist() == codes.tolist()
    assert order_codes(pa.array(values), paimon).tolist() == codes.tolist()
    back = float_from_codes(codes[:-1], double=dtype == np.float64)
    assert back.tobytes() == values[:-1].tobytes()  # -0.0 comes back as -0.0


def test_ordering_codes_put_null_lowest_and_compare_tuples():
    a = pa.array([None, 2, 1, 1, None], pa.int64())
    b = pa.array([None, 0.0, -0.0, 5.0, 1.0], pa.float64())
    codes = ordering_codes([a, b])
    assert codes[0] == 0  # every field null
    # (null, 1.0) < (1, -0.0) < (1, 5.0) < (2, 0.0)
    assert codes[4] < codes[2] < codes[3] < codes[1]
