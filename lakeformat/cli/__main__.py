"""`python -m lakeformat.cli ...`: the same as the `lakeformat` script."""

import sys

from lakeformat.cli.app import main

sys.exit(main())
