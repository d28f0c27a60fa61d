"""Notebook 6, "batching dynamic graphs": the reference, hidden tests, judges, wrong answers.

- `reference`: the notebook's answer cells and locked cells, executed (see reference_cells.py);
- `grade`: the kernel half of each hidden test (NOTE [Hidden tests in two halves] in
  solutions/grading.py): runs the answer on the grader's cases, returns plain data;
- `judge`: the judge half: decides the points from that data and the reference's;
- `wrong_answers`: plausible mistakes per exercise, which must lose points, and correct
  variants, which must not.
"""
