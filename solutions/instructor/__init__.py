"""Instructor tools: build releases, collect, autograde, feedback, export, validate, leak scan.

Run `python -m solutions --help` from the repository root. Each step wraps nbgrader 0.9 in
process (`NbGraderAPI`), configured by course/nbgrader_config.py.
"""
