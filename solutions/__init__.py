"""Reference solutions, graders and instructor tools of the course (never shipped to students).

- `solutions.<assignment>`: graders (`grade.py`) that hidden test cells call, reference solutions
  and wrong-answer fixtures for each assignment.
- `solutions.grading`: helpers every grader uses.
- `solutions.instructor`: the instructor command, `python -m solutions --help`.

Only `minitorch/` goes into the wheel; nothing here reaches a release notebook or feedback
(`python -m solutions leak-scan` checks).
"""
