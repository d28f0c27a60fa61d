"""`python -m solutions ...`: the instructor command (see solutions/instructor/cli.py)."""

import sys

from solutions.instructor.cli import main

sys.exit(main())
