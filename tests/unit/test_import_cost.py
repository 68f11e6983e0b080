"""`import lakeformat` stays cheap: Airflow parses DAG files every few seconds, so the package
root must not pull pyarrow or numpy until a class that needs them is used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(code: str) -> str:
    """Run `code` in a fresh interpreter (the test process has pyarrow loaded already)."""
    probe = f"{code}; import sys; print('pyarrow' in sys.modules, 'numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_import_lakeformat_loads_neither_pyarrow_nor_numpy():
    assert _loaded_after("import lakeformat") == "False False"
    assert _loaded_after("import lakeformat.errors") == "False False"
    assert _loaded_after("from lakeformat import TableNotFoundError, __version__") == \
        "False False"


def test_lazy_names_load_on_first_use():
    assert _loaded_after("import lakeformat; lakeformat.Catalog") == "True True"


def test_every_public_name_resolves():
    import lakeformat
    from lakeformat import Catalog, Table
    from lakeformat.catalog import Catalog as CatalogClass
    from lakeformat.version import __version__

    assert Catalog is CatalogClass and lakeformat.Table is Table
    assert lakeformat.__version__ == __version__
    assert all(getattr(lakeformat, name) is not None for name in lakeformat.__all__)
    assert set(lakeformat.__all__) <= set(dir(lakeformat))


def test_the_cli_and_the_table_api_load_no_pandas():
    """Every CLI command, Airflow task and Spark worker starts by importing these; pandas costs
    ~0.5 s of CPU there and only a conversion from Python values needs it (pyarrow imports it
    on the first `pa.scalar`/`pa.array` of Python objects)."""
    code = ("import lakeformat.cli.app, lakeformat.catalog, lakeformat.table, sys; "
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "False"
