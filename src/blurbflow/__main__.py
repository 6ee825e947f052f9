"""`python -m blurbflow`: the CLI for people (rules run workflow/scripts/ instead)."""

import sys

from blurbflow.cli import main

sys.exit(main())
