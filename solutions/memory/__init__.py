"""Notebook 4, "memory": reference solutions, graders and wrong-answer fixtures.

- `reference`: the solution of every exercise (the source of the notebook's solution cells);
- `grade`: one grader per exercise, called by the notebook's hidden test cells;
- `wrong_answers`: plausible mistakes per exercise, which the graders must reject.
"""
