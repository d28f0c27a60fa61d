"""Instructor tools: build releases, collect, autograde, feedback, export, validate, leak scan.

Run `python -m solutions --help` from the repository root. Each step wraps nbgrader 0.9 in
process (`NbGraderAPI`), configured by course/nbgrader_config.py.
"""

import sys

# jsonschema (under nbformat and nbgrader) imports rfc3987_syntax when it is installed, to check
# the "iri" string format, and that module builds a parser as it is imported: 2.1 s of every
# instructor command's start, for a format no notebook or nbgrader schema uses. Marking it
# absent makes jsonschema skip it (solutions/instructor/run_notebook.py does the same).
sys.modules.setdefault("rfc3987_syntax", None)
