"""`python -m blurbflow`: the CLI through the interpreter itself (how the rules call it)."""

import sys

from blurbflow.cli import main

sys.exit(main())
