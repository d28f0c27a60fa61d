"""Notebook 6, "batching dynamic graphs": reference solutions, graders and wrong-answer fixtures.

- `reference`: the notebook's answer cells and locked cells, executed (see reference_cells.py);
- `grade`: one grader per exercise, called by the notebook's hidden test cells;
- `wrong_answers`: plausible mistakes per exercise, which the graders must reject.
"""
